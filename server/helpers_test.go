package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views"
)

// fixedNow is the clock of the test servers and stores.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a server over a memstore, for handler tests.
type env struct {
	t     *testing.T
	srv   *Server
	store *faultyStore
	mem   *store.Store
	logs  *syncBuffer
	// stopIndex stops the recall follower (withLongTerm), if any.
	stopIndex func()
}

// newEnv returns a server over a new memstore; opts may change the
// config before New.
func newEnv(t *testing.T, opts ...func(*Config)) *env {
	t.Helper()
	mem := memstore.New(memstore.Options{Clock: func() time.Time { return fixedNow }})
	fs := &faultyStore{Driver: mem}
	logs := &syncBuffer{}
	cfg := Config{
		Store:  store.New(fs),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Clock:  func() time.Time { return fixedNow },
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopIndex := func() {}
	if f := cfg.RecallFollower; f != nil { // withLongTerm
		stopIndex = views.Start(f, nil) // the server's own service wakes it
	}
	t.Cleanup(func() {
		stopIndex()
		srv.Close()
		mem.Close()
	})
	return &env{t: t, srv: srv, store: fs, mem: mem, logs: logs, stopIndex: stopIndex}
}

// response is a recorded response.
type response struct {
	code   int
	header http.Header
	body   []byte
}

// json decodes the body into v, failing the test if it does not decode.
func (r *response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		body := r.body
		if len(body) > 500 {
			body = body[:500]
		}
		t.Fatalf("status %d, body %q: %v", r.code, body, err)
	}
}

// apiErr decodes an error body.
func (r *response) apiErr(t *testing.T) *api.ErrorDetail {
	t.Helper()
	var b api.ErrorBody
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || b.Error.Code == "" {
		t.Fatalf("status %d: not an error body: %q (%v)", r.code, r.body, err)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q", ct)
	}
	return &b.Error
}

// do sends a request to the handler. body may be a string, []byte, nil or
// a value to marshal; a non-nil body gets Content-Type application/json
// unless headers set it ("Content-Type", "" removes it).
func (e *env) do(method, path string, body any, headers ...string) *response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	return &response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// must sends a request and fails the test unless the status is want.
func (e *env) must(want int, method, path string, body any, headers ...string) *response {
	e.t.Helper()
	r := e.do(method, path, body, headers...)
	if r.code != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.code, want, r.body)
	}
	return r
}

// create creates a session with the given ID.
func (e *env) create(id string) *store.Session {
	e.t.Helper()
	var s store.Session
	e.must(201, "POST", "/v1/sessions", map[string]any{"id": id, "user_id": "u1", "agent": "coder"}).json(e.t, &s)
	return &s
}

// appendSteps appends steps (JSON) and returns the response.
func (e *env) appendSteps(id string, steps string, headers ...string) api.AppendResponse {
	e.t.Helper()
	var out api.AppendResponse
	e.must(201, "POST", "/v1/sessions/"+id+"/steps", steps, headers...).json(e.t, &out)
	return out
}

// dump is the whole content of the store, to check that a refused request
// changed nothing.
func (e *env) dump() string {
	e.t.Helper()
	ctx := context.Background()
	var b strings.Builder
	token := ""
	for {
		page, err := e.mem.List(ctx, store.ListRequest{PageSize: 1000, PageToken: token})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, s := range page.Sessions {
			data, _ := json.Marshal(s)
			b.Write(data)
			resp, err := e.mem.Read(ctx, store.ReadRequest{Tenant: s.Tenant, SessionID: s.ID})
			if err != nil {
				e.t.Fatal(err)
			}
			for _, en := range resp.Entries {
				data, _ := json.Marshal(en)
				b.Write(data)
				if en.Step != nil {
					data, _ := agentmem.MarshalStep(en.Step)
					b.Write(data)
				}
				if en.Compaction != nil {
					data, _ := store.EncodeCompaction(en.Compaction)
					b.Write(data)
				}
			}
			b.WriteByte('\n')
		}
		if page.NextPageToken == "" {
			return b.String()
		}
		token = page.NextPageToken
	}
}

// faultyStore wraps a store to inject failures.
type faultyStore struct {
	store.Driver
	// fail, when set, is returned by every call (a store outage).
	fail atomic.Pointer[error]
	// panicOn, when set, makes Get panic.
	panicOn atomic.Bool
	// reads and gets count Read and Get calls.
	reads, gets atomic.Int64
}

// The change feed of the memstore, failing like the rest.
func (f *faultyStore) feed() store.Feed {
	fd, _ := store.New(f.Driver).Feed()
	return fd
}

// faultyOf returns the faultyStore a test server's store is over.
func faultyOf(st *store.Store) *faultyStore {
	var f *faultyStore
	if !st.As(&f) {
		panic(fmt.Sprintf("%v is not over a faultyStore", st))
	}
	return f
}

func (f *faultyStore) ReadFeed(ctx context.Context, req store.FeedRequest) (*store.FeedResponse, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.feed().ReadFeed(ctx, req)
}

func (f *faultyStore) FeedHead(ctx context.Context) (int64, error) {
	if err := f.err(); err != nil {
		return 0, err
	}
	return f.feed().FeedHead(ctx)
}

func (f *faultyStore) LoadCursor(ctx context.Context, consumer string) (store.FeedCursor, error) {
	if err := f.err(); err != nil {
		return store.FeedCursor{}, err
	}
	return f.feed().LoadCursor(ctx, consumer)
}

func (f *faultyStore) SaveCursor(ctx context.Context, consumer string, c store.FeedCursor) error {
	if err := f.err(); err != nil {
		return err
	}
	return f.feed().SaveCursor(ctx, consumer, c)
}

func (f *faultyStore) DropCursor(ctx context.Context, consumer string) error {
	if err := f.err(); err != nil {
		return err
	}
	return f.feed().DropCursor(ctx, consumer)
}

func (f *faultyStore) err() error {
	if p := f.fail.Load(); p != nil {
		return *p
	}
	return nil
}

func (f *faultyStore) setFail(err error) {
	if err == nil {
		f.fail.Store(nil)
		return
	}
	f.fail.Store(&err)
}

func (f *faultyStore) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Driver.Create(ctx, req)
}

func (f *faultyStore) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	f.gets.Add(1)
	if f.panicOn.Load() {
		panic("injected panic")
	}
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Driver.Get(ctx, tenant, id)
}

func (f *faultyStore) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Driver.List(ctx, req)
}

func (f *faultyStore) Delete(ctx context.Context, tenant, id string) error {
	if err := f.err(); err != nil {
		return err
	}
	return f.Driver.Delete(ctx, tenant, id)
}

func (f *faultyStore) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Driver.Append(ctx, req)
}

func (f *faultyStore) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	f.reads.Add(1)
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Driver.Read(ctx, req)
}

// pingStore is a faultyStore with a Ping method.
type pingStore struct {
	*faultyStore
	pings atomic.Int64
}

func (p *pingStore) Ping(context.Context) error {
	p.pings.Add(1)
	return p.err()
}

// errOutage stands for a store that cannot be reached, as a backend
// reports it (marked transient).
var errOutage = fmt.Errorf("%w: dial tcp 127.0.0.1:5432: connection refused", agentmem.ErrUnavailable)

// errBroken stands for a failure nobody expected (a corrupt row, a bug):
// a store error that is not marked transient.
var errBroken = errors.New("stored entry 2 does not decode: invalid character 'x' at 5432")

// syncBuffer is a bytes.Buffer safe for concurrent writes (the logs).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Sample steps.
const (
	sysStep  = `{"type":"system_prompt","content":"You are a careful coding agent."}`
	taskStep = `{"type":"task","task":"Fix the failing test in parser.go."}`
)

// actionStep returns an action step with one tool call and its result.
func actionStep(i int, result string) string {
	call := `c` + itoa(i)
	return `{"type":"action","model_output":"Step ` + itoa(i) + `: reading a file.","tool_calls":[{"id":"` + call +
		`","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"f` + itoa(i) + `.go\"}"}}],"results":[{"call_id":"` + call +
		`","content":` + quote(result) + `}]}`
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// readSteps is the body of GET /v1/sessions/{id}/steps
// (api.ReadStepsResponse) with its steps decoded into typed steps.
type readSteps struct {
	Steps       agentmem.StepList `json:"steps"`
	Compactions []compactionEntry `json:"compactions,omitempty"`
	LastSeq     int64             `json:"last_seq"`
}

// compactionEntry is an api.CompactionEntry with its replaced copies
// decoded into typed steps.
type compactionEntry struct {
	Seq      int64             `json:"seq"`
	Time     time.Time         `json:"time"`
	Amend    bool              `json:"amend,omitempty"`
	Working  *[]int64          `json:"working,omitempty"`
	Removed  []int64           `json:"removed,omitempty"`
	Replaced agentmem.StepList `json:"replaced,omitempty"`
}
