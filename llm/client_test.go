package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var userMsg = []Message{{Role: "user", Content: TextContent("x")}}

// recordSleeps replaces c's backoff sleep with one that records the
// requested waits and returns at once.
func recordSleeps(c *Client) *[]time.Duration {
	var mu sync.Mutex
	waits := new([]time.Duration)
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return waits
}

func TestRetry429HonoursRetryAfter(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "7")
			writeJSON(t, w, 429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		writeJSON(t, w, 200, okChat)
	}, Config{})
	waits := recordSleeps(c)
	resp, err := c.Chat(context.Background(), ChatRequest{Messages: userMsg})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Message.Content.Text != "hi there" {
		t.Errorf("content = %q", resp.Message.Content.Text)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("attempts = %d, want 2", n)
	}
	if len(*waits) != 1 || (*waits)[0] != 7*time.Second {
		t.Errorf("waits = %v, want [7s] from Retry-After", *waits)
	}
}

func TestRetry429RealWait(t *testing.T) {
	var calls atomic.Int32
	var first, second time.Time
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			writeJSON(t, w, 429, `{"error":{"message":"slow down"}}`)
		default:
			second = time.Now()
			writeJSON(t, w, 200, okChat)
		}
	}, Config{})
	if _, err := c.Chat(context.Background(), ChatRequest{Messages: userMsg}); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("attempts = %d, want 2", n)
	}
	if gap := second.Sub(first); gap < 950*time.Millisecond {
		t.Errorf("retried after %v, want >= 1s (Retry-After: 1)", gap)
	}
}

func TestRetryAfterMs(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After-Ms", "250")
			w.Header().Set("Retry-After", "3")
			writeJSON(t, w, 503, `{"error":{"message":"overloaded"}}`)
			return
		}
		writeJSON(t, w, 200, okChat)
	}, Config{})
	waits := recordSleeps(c)
	if _, err := c.Chat(context.Background(), ChatRequest{Messages: userMsg}); err != nil {
		t.Fatal(err)
	}
	if len(*waits) != 1 || (*waits)[0] != 250*time.Millisecond {
		t.Errorf("waits = %v, want [250ms]", *waits)
	}
}

func TestNoRetryOn400(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(t, w, 400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
	}, Config{MaxRetries: 5})
	waits := recordSleeps(c)
	_, err := c.Chat(context.Background(), ChatRequest{Messages: userMsg})
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *APIError", err)
	}
	want := APIError{StatusCode: 400, Type: "invalid_request_error", Code: "context_length_exceeded", Message: "This model's maximum context length is 8192 tokens."}
	if *apiErr != want {
		t.Errorf("APIError = %+v, want %+v", *apiErr, want)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
	if len(*waits) != 0 {
		t.Errorf("slept %v before a non-retryable error", *waits)
	}
	const wantMsg = "llm: API error (HTTP 400, type invalid_request_error, code context_length_exceeded): This model's maximum context length is 8192 tokens."
	if err.Error() != wantMsg {
		t.Errorf("Error() = %q\nwant      %q", err.Error(), wantMsg)
	}
}

func TestNoRetryOnOther4xx(t *testing.T) {
	for _, status := range []int{401, 403, 404, 408, 409, 422} {
		var calls atomic.Int32
		c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			writeJSON(t, w, status, `{"error":"nope"}`)
		}, Config{})
		_, err := c.Chat(context.Background(), ChatRequest{Messages: userMsg})
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != status || apiErr.Message != "nope" {
			t.Errorf("%d: err = %v", status, err)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("%d: attempts = %d, want 1", status, n)
		}
	}
}

func TestRetriesExhausted(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(t, w, 503, `{"error":{"message":"overloaded","type":"server_error"}}`)
	}, Config{MaxRetries: 3})
	waits := recordSleeps(c)
	c.backoffBase = 100 * time.Millisecond
	_, err := c.Chat(context.Background(), ChatRequest{Messages: userMsg})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Fatalf("err = %v, want *APIError 503", err)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("attempts = %d, want 4 (1 + MaxRetries 3)", n)
	}
	if !strings.Contains(err.Error(), "giving up after 4 attempts") {
		t.Errorf("err = %q, want attempt count", err)
	}
	// Exponential with jitter in [d/2, d]: 100ms, 200ms, 400ms.
	if len(*waits) != 3 {
		t.Fatalf("waits = %v, want 3", *waits)
	}
	for i, d := range *waits {
		hi := c.backoffBase << i
		if d < hi/2 || d > hi {
			t.Errorf("wait %d = %v, want in [%v, %v]", i, d, hi/2, hi)
		}
	}
}

func TestRetriesDisabled(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(t, w, 500, `{}`)
	}, Config{MaxRetries: -1})
	_, err := c.Chat(context.Background(), ChatRequest{Messages: userMsg})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Message != "Internal Server Error" {
		t.Errorf("err = %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
}

func TestRetryAfterTooLongNotRetried(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "3600")
		writeJSON(t, w, 429, `{"error":{"message":"quota"}}`)
	}, Config{})
	waits := recordSleeps(c)
	_, err := c.Chat(context.Background(), ChatRequest{Messages: userMsg})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.RetryAfter != time.Hour {
		t.Fatalf("err = %v, want *APIError with RetryAfter 1h", err)
	}
	if n := calls.Load(); n != 1 || len(*waits) != 0 {
		t.Errorf("attempts = %d, waits = %v; want 1 attempt, no wait", n, *waits)
	}
}

func TestRetryTransportError(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			_ = conn.Close() // drop the connection without a response
			return
		}
		writeJSON(t, w, 200, okChat)
	}, Config{})
	if _, err := c.Chat(context.Background(), ChatRequest{Messages: userMsg}); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("attempts = %d, want 2", n)
	}
}

func TestPerRequestTimeoutRetried(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			// Read the body so the server notices when the client hangs up.
			_, _ = io.Copy(io.Discard, r.Body)
			select { // hang until the client gives up on this attempt
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		writeJSON(t, w, 200, okChat)
	}, Config{Timeout: 100 * time.Millisecond})
	start := time.Now()
	if _, err := c.Chat(context.Background(), ChatRequest{Messages: userMsg}); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("attempts = %d, want 2", n)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v; per-request timeout not applied", el)
	}
}

func TestContextCancelDuringBackoff(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "30")
		writeJSON(t, w, 429, `{"error":{"message":"slow down"}}`)
	}, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for calls.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // now sleeping in the 30s backoff
		cancel()
	}()
	start := time.Now()
	_, err := c.Chat(ctx, ChatRequest{Messages: userMsg})
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Chat returned after %v; cancellation did not interrupt the backoff", el)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Errorf("err = %v, want the last *APIError kept", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
}

func TestContextCancelDuringRequest(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Chat(ctx, ChatRequest{Messages: userMsg})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("attempts = %d, want 1 (no retry once the caller's context is done)", n)
	}
}

func TestAlreadyCancelledContext(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(t, w, 200, okChat)
	}, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Chat(ctx, ChatRequest{Messages: userMsg}); !errors.Is(err, context.Canceled) {
		t.Errorf("Chat err = %v, want context.Canceled", err)
	}
	c.cfg.EmbeddingModel = "e"
	if _, err := c.Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed err = %v, want context.Canceled", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("server called %d times", n)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		hdr  map[string]string
		want time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After": "0"}, 0},
		{map[string]string{"Retry-After": "-3"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{map[string]string{"retry-after-ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond},
		{map[string]string{"retry-after-ms": "junk", "Retry-After": "9"}, 9 * time.Second},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.hdr {
			h.Set(k, v)
		}
		if got := parseRetryAfter(h, now); got != tt.want {
			t.Errorf("parseRetryAfter(%v) = %v, want %v", tt.hdr, got, tt.want)
		}
	}
}

func TestParseAPIErrorVariants(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   APIError
	}{
		{401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			APIError{StatusCode: 401, Type: "invalid_request_error", Code: "invalid_api_key", Message: "Incorrect API key provided"}},
		{400, `{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400,"error":{"code":400,"message":"bad input","type":"BadRequestError"}}`,
			APIError{StatusCode: 400, Type: "BadRequestError", Code: "400", Message: "bad input"}},
		{404, `{"error":"model \"x\" not found, try pulling it first"}`,
			APIError{StatusCode: 404, Message: `model "x" not found, try pulling it first`}},
		{422, `{"detail":"Field required"}`, APIError{StatusCode: 422, Message: "Field required"}},
		{422, `{"detail":[{"loc":["body","model"],"msg":"Field required"}]}`,
			APIError{StatusCode: 422, Message: `[{"loc":["body","model"],"msg":"Field required"}]`}},
		{400, `{"object":"error","message":"vllm says no","code":400}`, APIError{StatusCode: 400, Message: "vllm says no"}},
		{502, "<html>Bad Gateway</html>\n", APIError{StatusCode: 502, Message: "<html>Bad Gateway</html>"}},
		{500, "", APIError{StatusCode: 500, Message: "Internal Server Error"}},
		{500, `{"error":null}`, APIError{StatusCode: 500, Message: `{"error":null}`}},
	}
	for _, tt := range tests {
		got := parseAPIError(tt.status, http.Header{}, []byte(tt.body))
		if *got != tt.want {
			t.Errorf("parseAPIError(%d, %s) = %+v, want %+v", tt.status, tt.body, *got, tt.want)
		}
	}
	long := strings.Repeat("é", 1000)
	if got := parseAPIError(500, http.Header{}, []byte(long)); len(got.Message) > 520 || !strings.HasSuffix(got.Message, "…") {
		t.Errorf("long body message not truncated: %d bytes", len(got.Message))
	}
}

func TestAPIErrorMessage(t *testing.T) {
	if s := (&APIError{StatusCode: 503}).Error(); s != "llm: API error (HTTP 503)" {
		t.Errorf("Error() = %q", s)
	}
	if s := (&APIError{StatusCode: 429, Code: "rate_limit_exceeded", Message: "slow"}).Error(); s != "llm: API error (HTTP 429, code rate_limit_exceeded): slow" {
		t.Errorf("Error() = %q", s)
	}
}

func TestNew(t *testing.T) {
	bad := []string{"", "   ", "not a url", "localhost:8080", "ftp://host/v1", "http://", "http://host/v1#frag", "http://[::1"}
	for _, u := range bad {
		if _, err := New(Config{BaseURL: u}); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%q) err = %v, want ErrConfig", u, err)
		}
	}
	if _, err := New(Config{BaseURL: "http://h/v1", EmbedBatchSize: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("negative batch size: err = %v, want ErrConfig", err)
	}
	c, err := New(Config{BaseURL: " https://api.example.com/v1/ "})
	if err != nil {
		t.Fatal(err)
	}
	if c.maxRetries != DefaultMaxRetries || c.timeout != DefaultTimeout || c.batchSize != DefaultEmbedBatchSize ||
		c.userAgent != DefaultUserAgent || c.httpClient == nil {
		t.Errorf("defaults not applied: %+v", c)
	}
	if got := c.base.JoinPath("chat/completions").String(); got != "https://api.example.com/v1/chat/completions" {
		t.Errorf("endpoint = %q", got)
	}
	if got := c.Config().BaseURL; got != "https://api.example.com/v1/" {
		t.Errorf("Config().BaseURL = %q", got)
	}
	// A query on the base URL (e.g. an api-version) is kept.
	c, err = New(Config{BaseURL: "https://h/openai?api-version=2024-06-01", Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.base.JoinPath("embeddings").String(); got != "https://h/openai/embeddings?api-version=2024-06-01" {
		t.Errorf("endpoint = %q", got)
	}
	if c.timeout >= 0 {
		t.Errorf("negative Timeout should disable the per-request timeout, got %v", c.timeout)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv("AGM_BASE_URL", "http://localhost:11434/v1")
	t.Setenv("AGM_API_KEY", "sk-env")
	t.Setenv("AGM_MODEL", "llama3.2")
	t.Setenv("AGM_EMBEDDING_MODEL", "nomic-embed-text")
	want := Config{BaseURL: "http://localhost:11434/v1", APIKey: "sk-env", Model: "llama3.2", EmbeddingModel: "nomic-embed-text"}
	for _, prefix := range []string{"AGM", "AGM_"} {
		cfg, ok := ConfigFromEnv(prefix)
		if !ok || cfg != want {
			t.Errorf("ConfigFromEnv(%q) = %+v, %v; want %+v, true", prefix, cfg, ok, want)
		}
	}
	t.Setenv("NOPE_MODEL", "m")
	if cfg, ok := ConfigFromEnv("NOPE"); ok || cfg.Model != "m" {
		t.Errorf("ConfigFromEnv(unset base) = %+v, %v; want ok=false", cfg, ok)
	}
	t.Setenv("EMPTY_BASE_URL", "")
	if _, ok := ConfigFromEnv("EMPTY"); ok {
		t.Error("empty BASE_URL should give ok=false")
	}
	cfg, _ := ConfigFromEnv("AGM")
	if _, err := New(cfg); err != nil {
		t.Errorf("New(ConfigFromEnv) = %v", err)
	}
}
