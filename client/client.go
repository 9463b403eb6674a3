package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/agentmem/api"
)

// Defaults of the options.
const (
	// DefaultUserAgent is the User-Agent of a client without
	// WithUserAgent.
	DefaultUserAgent = "agentmem-go-client/1"
	// DefaultMaxResponseBytes bounds a response body (WithMaxResponseBytes).
	DefaultMaxResponseBytes = 256 << 20
	// DefaultRetries is how many times an idempotent request is retried
	// after a retryable failure (WithRetries).
	DefaultRetries = 2
	// maxRetryWait caps the wait between two attempts, whatever
	// Retry-After says.
	maxRetryWait = 10 * time.Second
)

// Client talks to an agentmem server (`agentmem serve`, package server)
// over its HTTP JSON API: a method per route, with the wire types of
// package api.
//
// A Client is safe for concurrent use by many goroutines.
type Client struct {
	base       *url.URL // scheme://host[/prefix], no trailing slash
	hc         *http.Client
	ownHC      bool
	apiKey     string
	userAgent  string
	maxBody    int64
	retries    int
	damaged    DamageHandler
	closed     atomic.Bool
	retryDelay func(attempt int, after time.Duration) time.Duration
}

// Option configures a Client.
type Option func(*Client) error

// WithAPIKey sends key as "Authorization: Bearer <key>" on every request.
// A key belongs to one tenant: every session, fact and recall document
// the client reaches is that tenant's.
func WithAPIKey(key string) Option {
	return func(c *Client) error {
		if strings.ContainsAny(key, "\r\n") {
			return errors.New("agentmem client: the API key holds a line break")
		}
		c.apiKey = key
		return nil
	}
}

// WithHTTPClient makes the client send its requests with hc (its
// transport, timeouts, proxy, TLS configuration). Close leaves it open.
// The default is a client of its own over http.DefaultTransport, with no
// timeout: bound each call with its context.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return errors.New("agentmem client: WithHTTPClient(nil)")
		}
		c.hc, c.ownHC = hc, false
		return nil
	}
}

// WithUserAgent sets the User-Agent header (DefaultUserAgent otherwise).
func WithUserAgent(ua string) Option {
	return func(c *Client) error {
		if strings.ContainsAny(ua, "\r\n") {
			return errors.New("agentmem client: the User-Agent holds a line break")
		}
		c.userAgent = ua
		return nil
	}
}

// WithMaxResponseBytes bounds the body of a response the client reads
// (DefaultMaxResponseBytes, 256 MiB, otherwise); a larger one is an
// error. Reads of long logs are fetched in pages, each bounded by it.
func WithMaxResponseBytes(n int64) Option {
	return func(c *Client) error {
		if n <= 0 {
			return errors.New("agentmem client: WithMaxResponseBytes needs a positive size")
		}
		c.maxBody = n
		return nil
	}
}

// WithRetries sets how many times a request that is safe to repeat is
// sent again after a retryable failure: 429, 502, 503, 504 or a failed
// connection. Safe to repeat are a read, an append of steps that all have
// IDs, and messages with an Idempotency-Key. The client waits as the server's
// Retry-After says (at most 10 s), or 100 ms, 200 ms, 400 ms ... without
// one. 0 turns retries off; the default is DefaultRetries.
func WithRetries(n int) Option {
	return func(c *Client) error {
		if n < 0 {
			return errors.New("agentmem client: WithRetries needs a non-negative count")
		}
		c.retries = n
		return nil
	}
}

// DamageHandler receives a record a search left out because its stored
// form does not decode (api.DamagedRecord), and its kind: "fact" or
// "document".
type DamageHandler func(ctx context.Context, kind string, d api.DamagedRecord)

// WithDamageHandler has the client pass h the damaged records of the
// answers of SearchRecall and SearchFacts, which return only what
// decodes (ListSessions returns its damaged sessions in its answer). The
// default drops them; the server logs every one.
func WithDamageHandler(h DamageHandler) Option {
	return func(c *Client) error {
		c.damaged = h
		return nil
	}
}

// New returns a client of the server at baseURL: "http://host:port" or
// "https://host", optionally with a path prefix under which a proxy
// serves the API ("https://example.com/memory"). The API's routes (/v1/...)
// are appended to it.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("agentmem client: the base URL does not parse: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("agentmem client: the base URL %q must be http:// or https://", u.Redacted())
	}
	if u.Host == "" {
		return nil, fmt.Errorf("agentmem client: the base URL %q has no host", u.Redacted())
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("agentmem client: the base URL must have no user, query or fragment (use WithAPIKey for the key)")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	c := &Client{
		base: u, hc: &http.Client{}, ownHC: true, userAgent: DefaultUserAgent,
		maxBody: DefaultMaxResponseBytes, retries: DefaultRetries, retryDelay: retryDelay,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// BaseURL returns the server's base URL, as given to New.
func (c *Client) BaseURL() string { return c.base.String() }

// Close makes later calls fail with ErrClosed, and closes the idle
// connections of the client's own http.Client (not those of one given
// with WithHTTPClient). Calling it twice returns ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return ErrClosed
	}
	if c.ownHC {
		c.hc.CloseIdleConnections()
	}
	return nil
}

// retryDelay is the wait before attempt (1, 2, ...): Retry-After when the
// server sent one, else exponential from 100 ms; capped.
func retryDelay(attempt int, after time.Duration) time.Duration {
	if after > 0 {
		return min(after, maxRetryWait)
	}
	return min(time.Duration(100<<(attempt-1))*time.Millisecond, maxRetryWait)
}

// request describes one API call.
type request struct {
	method string
	path   string // below the base: "/v1/sessions/x"
	query  url.Values
	body   any // marshalled as JSON; []byte or json.RawMessage sent as is
	header map[string]string
	// idempotent: the request may be sent again after a retryable
	// failure.
	idempotent bool
}

// response is a successful answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends req, retrying as configured, and returns a 2xx answer or the
// error: *Error for an error answer, one wrapping ErrUnavailable for a
// transport failure, ErrClosed after Close, the context's error when it
// ends.
func (c *Client) do(ctx context.Context, req request) (*response, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	var body []byte
	switch b := req.body.(type) {
	case nil:
	case json.RawMessage:
		body = b
	case []byte:
		body = b
	default:
		var err error
		if body, err = jsonMarshal(b); err != nil {
			return nil, fmt.Errorf("agentmem client: encoding the request: %w", err)
		}
	}
	tries := 1
	if req.idempotent {
		tries += c.retries
	}
	var err error
	for attempt := 1; ; attempt++ {
		var resp *response
		var after time.Duration
		resp, after, err = c.send(ctx, req, body)
		if err == nil {
			return resp, nil
		}
		if attempt >= tries || ctx.Err() != nil || !errors.Is(err, ErrUnavailable) || c.closed.Load() {
			return nil, err
		}
		t := time.NewTimer(c.retryDelay(attempt, after))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// contextErr is the error of a request whose context ended: the
// context's, marked ErrUnavailable when its deadline passed (a transient
// failure, as a store reports it).
func contextErr(ctx context.Context) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// send sends req once.
func (c *Client) send(ctx context.Context, req request, body []byte) (*response, time.Duration, error) {
	// req.path holds escaped segments (pathID): the URL keeps them as
	// they are, so that an ID's "/" or "%" is not taken for a separator,
	// or escaped twice.
	u := *c.base
	u.RawPath = c.base.EscapedPath() + req.path
	var err error
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		return nil, 0, fmt.Errorf("agentmem client: %s %s: %w", req.method, req.path, err)
	}
	if len(req.query) > 0 {
		u.RawQuery = req.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, u.String(), rd)
	if err != nil {
		return nil, 0, fmt.Errorf("agentmem client: %s %s: %w", req.method, req.path, err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", c.userAgent)
	if c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	for k, v := range req.header {
		hr.Header.Set(k, v)
	}
	hresp, err := c.hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, contextErr(ctx)
		}
		return nil, 0, fmt.Errorf("%w: %s %s: %w", ErrUnavailable, req.method, req.path, err)
	}
	defer hresp.Body.Close()
	limit := c.maxBody
	if hresp.StatusCode >= 300 {
		limit = maxErrorBody
	}
	data, err := io.ReadAll(io.LimitReader(hresp.Body, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, contextErr(ctx)
		}
		return nil, 0, fmt.Errorf("%w: %s %s: reading the answer: %w", ErrUnavailable, req.method, req.path, err)
	}
	if hresp.StatusCode >= 300 {
		if int64(len(data)) > limit {
			data = data[:limit]
		}
		e := apiError(req.method, req.path, hresp.StatusCode, hresp.Header, data)
		return nil, e.RetryAfter, e
	}
	if int64(len(data)) > limit {
		return nil, 0, fmt.Errorf("agentmem client: %s %s: the answer is larger than %d bytes (see WithMaxResponseBytes)", req.method, req.path, limit)
	}
	return &response{status: hresp.StatusCode, header: hresp.Header, body: data}, 0, nil
}

// call sends req and decodes the answer's JSON body into out (if not nil).
func (c *Client) call(ctx context.Context, req request, out any) (*response, error) {
	resp, err := c.do(ctx, req)
	if err != nil {
		return nil, err
	}
	if out != nil {
		if err := jsonUnmarshal(resp.body, out); err != nil {
			return nil, fmt.Errorf("agentmem client: %s %s: decoding the answer: %w", req.method, req.path, err)
		}
	}
	return resp, nil
}

// callFor sends req and returns the answer's JSON body decoded into a
// new T.
func callFor[T any](ctx context.Context, c *Client, req request) (*T, error) {
	var out T
	if _, err := c.call(ctx, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// jsonMarshal encodes v without HTML escaping.
func jsonMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonUnmarshal decodes exactly one JSON value.
func jsonUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// pathID escapes a path segment.
func pathID(s string) string { return url.PathEscape(s) }

// reportDamaged passes the damaged records of an answer to the damage
// handler, if any.
func (c *Client) reportDamaged(ctx context.Context, kind string, ds []api.DamagedRecord) {
	if c.damaged == nil {
		return
	}
	for _, d := range ds {
		c.damaged(ctx, kind, d)
	}
}

// newKey returns a new Idempotency-Key (a UUIDv7).
func newKey() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
