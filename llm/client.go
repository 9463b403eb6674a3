package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Defaults and limits.
const (
	// DefaultMaxRetries is the number of retries when Config.MaxRetries is 0.
	DefaultMaxRetries = 2
	// DefaultTimeout is the per-request timeout when Config.Timeout is 0.
	DefaultTimeout = 60 * time.Second
	// DefaultEmbedBatchSize is the number of inputs per embeddings request
	// when Config.EmbedBatchSize is 0.
	DefaultEmbedBatchSize = 256
	// DefaultUserAgent is the User-Agent header when Config.UserAgent is empty.
	DefaultUserAgent = "agentmem-llm/1"
	// MaxResponseBytes is the largest response body the client reads; a
	// larger one is an error wrapping ErrMalformedResponse.
	MaxResponseBytes = 32 << 20
	// MaxRetryAfter is the longest Retry-After the client waits for. When
	// a server asks for a longer wait the request is not retried and the
	// *APIError (with its RetryAfter) is returned at once.
	MaxRetryAfter = 2 * time.Minute

	defaultBackoffBase = 500 * time.Millisecond
	maxBackoff         = 8 * time.Second
	maxErrorBodyBytes  = 1 << 20
	drainBytes         = 64 << 10
)

// Config configures a Client.
type Config struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1" or
	// "http://localhost:11434/v1"; endpoint paths such as
	// "chat/completions" are appended to it. Required; http or https.
	BaseURL string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>".
	APIKey string
	// Model is the default chat model, used when ChatRequest.Model is empty.
	Model string
	// EmbeddingModel is the model used by Client.Embed.
	EmbeddingModel string
	// HTTPClient sends the requests; nil means a default client. Its own
	// Timeout, if any, applies in addition to Timeout.
	HTTPClient *http.Client
	// MaxRetries is how many times a request is retried after a 429, a 5xx
	// or a transport error; other 4xx are never retried. Retries use
	// exponential backoff and jitter, honouring Retry-After. 0 means
	// DefaultMaxRetries; a negative value disables retries.
	MaxRetries int
	// Timeout bounds each HTTP attempt, including reading the response.
	// 0 means DefaultTimeout; a negative value means no per-request
	// timeout (the caller's context still applies).
	Timeout time.Duration
	// UserAgent is sent as the User-Agent header; empty means
	// DefaultUserAgent.
	UserAgent string
	// EmbedBatchSize is the largest number of inputs sent in one
	// embeddings request. 0 means DefaultEmbedBatchSize.
	EmbedBatchSize int
}

// ConfigFromEnv reads a Config from the environment variables
// PREFIX_BASE_URL, PREFIX_API_KEY, PREFIX_MODEL and PREFIX_EMBEDDING_MODEL.
// An underscore is added after a non-empty prefix that does not end in one,
// so "OPENAI" and "OPENAI_" both read OPENAI_BASE_URL; an empty prefix reads
// BASE_URL etc. ok is false when the base URL variable is unset or empty.
func ConfigFromEnv(prefix string) (cfg Config, ok bool) {
	if prefix != "" && !strings.HasSuffix(prefix, "_") {
		prefix += "_"
	}
	cfg = Config{
		BaseURL:        strings.TrimSpace(os.Getenv(prefix + "BASE_URL")),
		APIKey:         strings.TrimSpace(os.Getenv(prefix + "API_KEY")),
		Model:          strings.TrimSpace(os.Getenv(prefix + "MODEL")),
		EmbeddingModel: strings.TrimSpace(os.Getenv(prefix + "EMBEDDING_MODEL")),
	}
	return cfg, cfg.BaseURL != ""
}

// Client calls an OpenAI-compatible API. Create it with New; it is safe for
// concurrent use.
type Client struct {
	cfg        Config
	base       *url.URL
	httpClient *http.Client
	maxRetries int
	timeout    time.Duration
	batchSize  int
	userAgent  string

	// Overridable by tests.
	backoffBase time.Duration
	maxBody     int64
	sleep       func(ctx context.Context, d time.Duration) error
}

// New validates cfg, fills in its defaults and returns a Client. Errors
// wrap ErrConfig.
func New(cfg Config) (*Client, error) {
	raw := strings.TrimSpace(cfg.BaseURL)
	if raw == "" {
		return nil, fmt.Errorf("%w: BaseURL is required", ErrConfig)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: BaseURL: %w", ErrConfig, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: BaseURL %q: scheme must be http or https", ErrConfig, raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%w: BaseURL %q: missing host", ErrConfig, raw)
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("%w: BaseURL %q: must not have a fragment", ErrConfig, raw)
	}
	if cfg.EmbedBatchSize < 0 {
		return nil, fmt.Errorf("%w: EmbedBatchSize %d is negative", ErrConfig, cfg.EmbedBatchSize)
	}
	cfg.BaseURL = raw
	c := &Client{
		cfg:         cfg,
		base:        u,
		httpClient:  cfg.HTTPClient,
		maxRetries:  cfg.MaxRetries,
		timeout:     cfg.Timeout,
		batchSize:   cfg.EmbedBatchSize,
		userAgent:   cfg.UserAgent,
		backoffBase: defaultBackoffBase,
		maxBody:     MaxResponseBytes,
		sleep:       sleepCtx,
	}
	if c.httpClient == nil {
		c.httpClient = &http.Client{}
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.batchSize == 0 {
		c.batchSize = DefaultEmbedBatchSize
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	return c, nil
}

// Config returns the configuration the client was created with (with
// BaseURL trimmed; other defaults are not filled in).
func (c *Client) Config() Config { return c.cfg }

// post sends in as JSON to the endpoint path (relative to the base URL)
// and decodes a 2xx response into out, retrying as configured.
func (c *Client) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("llm: encode %s request: %w", path, err)
	}
	endpoint := c.base.JoinPath(path).String()
	for attempt := 0; ; attempt++ {
		retry, err := c.attempt(ctx, endpoint, path, body, out)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			// The caller gave up; err already says why (it wraps ctx.Err()
			// when the cancellation interrupted the request).
			if !errors.Is(err, ctx.Err()) {
				return fmt.Errorf("llm: %w (last error: %w)", ctx.Err(), err)
			}
			return err
		}
		if !retry || attempt >= c.maxRetries {
			if attempt > 0 {
				return fmt.Errorf("llm: %s: giving up after %d attempts: %w", path, attempt+1, err)
			}
			return err
		}
		wait := c.backoff(attempt)
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > MaxRetryAfter {
				return err
			}
			wait = apiErr.RetryAfter
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("llm: %w while waiting to retry %s (last error: %w)", serr, path, err)
		}
	}
}

// attempt makes one HTTP request. retry reports whether a failure may be
// retried.
func (c *Client) attempt(ctx context.Context, endpoint, path string, body []byte, out any) (retry bool, err error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("llm: build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.httpClient.Do(req)
	if err != nil {
		return true, fmt.Errorf("llm: %w", err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes))
		_ = resp.Body.Close()
	}()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
		return retryableStatus(resp.StatusCode), parseAPIError(resp.StatusCode, resp.Header, data)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return true, fmt.Errorf("llm: %s: read response: %w", path, err)
	}
	if int64(len(data)) > c.maxBody {
		return false, fmt.Errorf("%w: %s: response body exceeds %d bytes", ErrMalformedResponse, path, c.maxBody)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return false, fmt.Errorf("%w: %s (HTTP %d, Content-Type %q): %w; body: %q",
			ErrMalformedResponse, path, resp.StatusCode, resp.Header.Get("Content-Type"), err, snippet(data, 200))
	}
	return false, nil
}

// backoff returns the jittered exponential delay before retry attempt+1:
// uniform in [d/2, d] where d = base·2^attempt, capped at maxBackoff.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.backoffBase
	for i := 0; i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBackoff)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleepCtx waits for d or until ctx is done, returning ctx.Err() in the
// latter case.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
