package factextract_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views"
	"github.com/agentmem/agentmem/views/factextract"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// model is a stand-in for an OpenAI-compatible chat model as
// facts.LLMExtractor calls it: "I live in X" in a user message adds
// "Lives in X." or supersedes the known fact of another city, "I still
// live in X" reinforces the known "Lives in X."; anything else is
// ignored. While failing is set, a turn that mentions it is
// answered 503, and the first such answer is signalled on failed.
type model struct {
	mu      sync.Mutex
	turns   []string // the user text of every turn answered
	failing string
	failed  chan struct{}
	fails   atomic.Int32
}

func (m *model) client(t *testing.T) *llm.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "test-model", MaxRetries: -1, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (m *model) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	var in struct {
		Known []struct{ ID, Text string } `json:"known_facts"`
		Turn  []struct{ Role, Content string }
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 ||
		json.Unmarshal([]byte(req.Messages[1].Content), &in) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var user []string
	for _, msg := range in.Turn {
		if msg.Role == "user" {
			user = append(user, msg.Content)
		}
	}
	text := strings.Join(user, " / ")
	m.mu.Lock()
	if m.failing != "" && strings.Contains(text, m.failing) {
		if m.fails.Add(1) == 1 {
			close(m.failed)
		}
		m.mu.Unlock()
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		return
	}
	m.turns = append(m.turns, text)
	m.mu.Unlock()
	decisions := `{"action":"ignore"}`
	if _, city, ok := strings.Cut(text, "I still live in "); ok {
		city = strings.Trim(strings.Fields(city)[0], ".!,")
		for _, k := range in.Known {
			if k.Text == "Lives in "+city+"." {
				decisions = fmt.Sprintf(`{"action":"reinforce","id":%q}`, k.ID)
			}
		}
	} else if _, city, ok := strings.Cut(text, "I live in "); ok {
		city = strings.Trim(strings.Fields(city)[0], ".!,")
		decisions = fmt.Sprintf(`{"action":"add","text":"Lives in %s."}`, city)
		for _, k := range in.Known {
			if strings.HasPrefix(k.Text, "Lives in ") && k.Text != "Lives in "+city+"." {
				decisions = fmt.Sprintf(`{"action":"supersede","id":%q,"text":"Lives in %s."}`, k.ID, city)
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": `{"decisions":[` + decisions + `]}`}}},
	})
}

// answered returns the user text of the turns the model answered.
func (m *model) answered() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.turns)
}

// fixture is a sessions service over a memstore, a facts memory and an
// LLM extractor of a stand-in model.
type fixture struct {
	svc   *sessions.Service
	st    *store.Store
	facts *facts.Memory
	model *model
	cfg   factextract.Config
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st := memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})
	t.Cleanup(func() { st.Close() })
	svc, err := sessions.New(sessions.Config{Store: st, Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	m := &model{failed: make(chan struct{})}
	mem := facts.New(facts.NewMemStore(), facts.Options{Clock: func() time.Time { return t0 }})
	return &fixture{svc: svc, st: st, facts: mem, model: m,
		cfg: factextract.Config{Facts: mem, Extractor: &facts.LLMExtractor{Client: m.client(t)}}}
}

// start runs a learner until the test ends or stop is called.
func (f *fixture) start(t *testing.T, opts views.Options) (*factextract.Learner, func()) {
	t.Helper()
	cfg := f.cfg
	cfg.Follow = opts
	l, stop, err := factextract.Start(f.svc, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return l, stop
}

func (f *fixture) create(t *testing.T, id, user string) {
	t.Helper()
	if _, err := f.svc.Create(context.Background(), store.CreateRequest{ID: id, UserID: user, Agent: "helper"}); err != nil {
		t.Fatal(err)
	}
}

// turn appends a user message and the assistant's answer.
func (f *fixture) turn(t *testing.T, id, user, answer string) {
	t.Helper()
	_, err := f.svc.AppendMessages(context.Background(), sessions.MessagesRequest{SessionID: id, Messages: []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text(user)},
		{Role: agentmem.RoleAssistant, Content: agentmem.Text(answer)},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// valid returns the texts of the user's valid facts, sorted.
func (f *fixture) valid(t *testing.T, user string) []string {
	t.Helper()
	fs, err := f.facts.List(context.Background(), "", user, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range fs {
		out = append(out, x.Text)
	}
	slices.Sort(out)
	return out
}

func waitSync(t *testing.T, l *factextract.Learner) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLearnsFromTurns: the turns of a session with a user become the
// user's facts, a later turn supersedes an earlier one's, and sessions
// without a user are left alone.
func TestLearnsFromTurns(t *testing.T) {
	f := newFixture(t)
	f.create(t, "s1", "alice")
	f.create(t, "anon", "")
	l, _ := f.start(t, views.Options{Settle: -1})
	f.turn(t, "s1", "Hello! I live in Berlin.", "Nice to meet you.")
	f.turn(t, "anon", "I live in Rome.", "Ciao.")
	waitSync(t, l)
	if got := f.valid(t, "alice"); !slices.Equal(got, []string{"Lives in Berlin."}) {
		t.Fatalf("alice's facts: %q", got)
	}
	fs, err := f.facts.List(context.Background(), "", "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if src := fs[0].Source; src.SessionID != "s1" || src.StepSeq != 2 || src.Agent != "helper" {
		t.Errorf("source %+v, want session s1, step 2 (the answer), agent helper", src)
	}
	f.turn(t, "s1", "What's the weather like?", "Sunny.")
	f.turn(t, "s1", "By the way, I live in Paris now.", "Noted.")
	waitSync(t, l)
	if got := f.valid(t, "alice"); !slices.Equal(got, []string{"Lives in Paris."}) {
		t.Errorf("alice's facts after moving: %q", got)
	}
	want := []string{"Hello! I live in Berlin.", "What's the weather like?", "By the way, I live in Paris now."}
	if got := f.model.answered(); !slices.Equal(got, want) {
		t.Errorf("turns extracted %q, want %q (each once, none of the session without a user)", got, want)
	}
}

// TestRestartResumes: a learner stopped and started again extracts the
// turns appended meanwhile, from its cursor, and none twice.
func TestRestartResumes(t *testing.T) {
	f := newFixture(t)
	f.create(t, "s1", "alice")
	l, stop := f.start(t, views.Options{Settle: -1})
	f.turn(t, "s1", "I live in Berlin.", "Nice.")
	waitSync(t, l)
	stop()
	f.turn(t, "s1", "I live in Paris now.", "Noted.")
	f.turn(t, "s1", "Thanks!", "You're welcome.")
	l2, _ := f.start(t, views.Options{Settle: -1})
	waitSync(t, l2)
	want := []string{"I live in Berlin.", "I live in Paris now.", "Thanks!"}
	if got := f.model.answered(); !slices.Equal(got, want) {
		t.Errorf("turns extracted %q, want %q", got, want)
	}
	if got := f.valid(t, "alice"); !slices.Equal(got, []string{"Lives in Paris."}) {
		t.Errorf("alice's facts: %q", got)
	}
}

// TestOutageDelays: while the model is down, a turn waits (the follower
// retries with backoff) and is extracted once it is back; the turn before
// it, in the same batch, is not extracted again.
func TestOutageDelays(t *testing.T) {
	f := newFixture(t)
	f.create(t, "s1", "alice")
	f.create(t, "s2", "bob")
	f.model.failing = "Rome"
	errs := make(chan error, 100)
	// Both turns are in the log before the learner reads it: one batch.
	f.turn(t, "s1", "I live in Berlin.", "Nice.")
	f.turn(t, "s2", "I live in Rome.", "Ciao.")
	l, _ := f.start(t, views.Options{Settle: -1, OnError: func(err error) {
		select {
		case errs <- err:
		default:
		}
	}})
	<-f.model.failed
	if err := <-errs; !strings.Contains(err.Error(), "s2") {
		t.Errorf("reported %v", err)
	}
	if got := f.valid(t, "bob"); len(got) != 0 {
		t.Errorf("bob's facts during the outage: %q", got)
	}
	f.model.mu.Lock()
	f.model.failing = ""
	f.model.mu.Unlock()
	waitSync(t, l)
	if got := f.valid(t, "bob"); !slices.Equal(got, []string{"Lives in Rome."}) {
		t.Errorf("bob's facts after the outage: %q", got)
	}
	if got := f.valid(t, "alice"); !slices.Equal(got, []string{"Lives in Berlin."}) {
		t.Errorf("alice's facts: %q", got)
	}
	if got := f.model.answered(); !slices.Equal(got, []string{"I live in Berlin.", "I live in Rome."}) {
		t.Errorf("turns extracted %q: each once", got)
	}
	if st := l.Status(); st.Errors == 0 {
		t.Errorf("status %+v: the outage is not counted", st)
	}
}

// TestReplayedBatch: a learner that stops (a crash, as far as the feed
// can tell) in the middle of a batch, after extracting some of its turns
// and before saving its cursor, leaves the batch to the next learner,
// which reads it again: it extracts the turns not done, and not those
// done, whose reinforcement is not counted twice nor their model called
// again.
func TestReplayedBatch(t *testing.T) {
	f := newFixture(t)
	f.create(t, "s1", "alice")
	f.create(t, "s2", "bob")
	l, stop := f.start(t, views.Options{Settle: -1})
	f.turn(t, "s1", "I live in Berlin.", "Nice.")
	waitSync(t, l)
	stop()
	// One batch: alice's turn is extracted, bob's fails until the first
	// learner is stopped.
	f.model.failing = "Rome"
	f.turn(t, "s1", "I still live in Berlin.", "Good.")
	f.turn(t, "s2", "I live in Rome.", "Ciao.")
	_, stop = f.start(t, views.Options{Settle: -1, OnError: func(error) {}})
	<-f.model.failed
	stop()
	if got := f.valid(t, "bob"); len(got) != 0 {
		t.Fatalf("bob's facts before the batch is done: %q", got)
	}
	f.model.mu.Lock()
	f.model.failing = ""
	f.model.mu.Unlock()
	l2, _ := f.start(t, views.Options{Settle: -1})
	waitSync(t, l2)
	if got := f.valid(t, "bob"); !slices.Equal(got, []string{"Lives in Rome."}) {
		t.Errorf("bob's facts: %q", got)
	}
	fs, err := f.facts.List(context.Background(), "", "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Reinforcements != 1 {
		t.Errorf("alice's facts %+v: want Berlin, reinforced once", fs)
	}
	want := []string{"I live in Berlin.", "I still live in Berlin.", "I live in Rome."}
	if got := f.model.answered(); !slices.Equal(got, want) {
		t.Errorf("turns extracted %q, want %q (each once)", got, want)
	}
}
