package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/sqlite"
)

// readLog records the reads of a store: each request and the number of
// entries and steps it returned; and, when race is set, appends a step
// through the store itself before the next append of a tool result, once,
// as another writer getting in first would.
type readLog struct {
	store.Driver
	mu    sync.Mutex
	reads []readRecord
	race  func() // run once before the next Append with an amendment
}

type readRecord struct {
	req  store.ReadRequest
	rows int // entries or working-set steps returned
}

func (l *readLog) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	resp, err := l.Driver.Read(ctx, req)
	if err == nil {
		l.mu.Lock()
		l.reads = append(l.reads, readRecord{req, len(resp.Entries) + len(resp.Steps)})
		l.mu.Unlock()
	}
	return resp, err
}

func (l *readLog) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	l.mu.Lock()
	race := l.race
	if req.Compaction != nil && req.Compaction.Amend {
		l.race = nil
	} else {
		race = nil
	}
	l.mu.Unlock()
	if race != nil {
		race()
	}
	return l.Driver.Append(ctx, req)
}

// take returns the reads recorded since the last take.
func (l *readLog) take() []readRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.reads
	l.reads = nil
	return r
}

func openSQLite(t *testing.T) *store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), t.TempDir()+"/s.db", sqlite.Options{Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func callMsg(ids ...string) agentmem.Message {
	m := agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text("Calling " + strings.Join(ids, ", "))}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, agentmem.ToolCall{ID: id, Name: "grep", Arguments: `{"q":"` + id + `"}`})
	}
	return m
}

func resultMsg(id, content string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleTool, ToolCallID: id, Content: agentmem.Text(content)}
}

// TestToolResultFoldsAgainstCache: a tool result sent on its own into a
// session the service holds in its cache is folded against the cached
// working set: it reads no working set from the store, and no entry
// when nothing was appended elsewhere since; after an append by another
// writer it reads only that entry; and when another writer gets in
// between its fold and its append, it catches up with the entries after
// the cached seq and tries again, without reading the working set.
func TestToolResultFoldsAgainstCache(t *testing.T) {
	ctx := context.Background()
	base := openSQLite(t)
	st := &readLog{Driver: base}
	rec := &recorder{}
	var lost atomic.Int64
	svc, err := New(Config{Store: store.New(st), Clock: func() time.Time { return t0 },
		Retry: &store.RetryPolicy{OnLost: func(string, int, bool) { lost.Add(1) }}})
	if err != nil {
		t.Fatal(err)
	}
	svc.Observe(rec)
	session(t, svc, "t", "s", 300)
	appendMsgs := func(msgs ...agentmem.Message) *MessagesResponse {
		t.Helper()
		r, err := svc.AppendMessages(ctx, MessagesRequest{Tenant: "t", SessionID: "s", Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	noWorkingSet := func(what string, reads []readRecord, maxRows int) {
		t.Helper()
		rows := 0
		for _, r := range reads {
			if r.req.WorkingSet {
				t.Errorf("%s: read the working set (%d steps)", what, r.rows)
			}
			rows += r.rows
		}
		if rows > maxRows {
			t.Errorf("%s: read %d entries, want at most %d: %+v", what, rows, maxRows, reads)
		}
	}

	// A call needs nothing read; the first result loads the session
	// into the cache, once.
	appendMsgs(callMsg("w"))
	if reads := st.take(); len(reads) != 0 {
		t.Fatalf("a call: reads %+v", reads)
	}
	r := appendMsgs(resultMsg("w", "warm"))
	if reads := st.take(); len(reads) != 1 || !reads[0].req.WorkingSet {
		t.Fatalf("the first result: reads %+v, want one working-set read", reads)
	}
	if len(r.Updated) != 1 || r.CompactionSeq == 0 {
		t.Fatalf("a result: %+v", r)
	}

	// A call and its result, each sent on its own: no entry read.
	appendMsgs(callMsg("c1"))
	noWorkingSet("a call", st.take(), 0)
	r = appendMsgs(resultMsg("c1", "main.go:12"))
	noWorkingSet("its result", st.take(), 0)
	if len(r.Updated) != 1 || r.LastSeq != r.CompactionSeq {
		t.Fatalf("its result: %+v", r)
	}

	// Another writer appends a step: the result reads only that entry.
	appendMsgs(callMsg("c2"))
	other := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "elsewhere"}, Task: "and meanwhile"}
	if _, err := base.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: "s", Steps: []agentmem.Step{other}}); err != nil {
		t.Fatal(err)
	}
	st.take()
	appendMsgs(resultMsg("c2", "two"))
	noWorkingSet("a result after another writer's step", st.take(), 1)

	// Another writer gets in between the fold and the append: the
	// append loses, the cache reads the entries after its seq, and the
	// result is folded again and stored.
	appendMsgs(callMsg("c3"))
	st.take()
	st.mu.Lock()
	st.race = func() {
		if _, err := base.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: "s", Steps: []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "racer"}, Task: "got in first"}}}); err != nil {
			t.Error(err)
		}
	}
	st.mu.Unlock()
	r = appendMsgs(resultMsg("c3", "three"))
	noWorkingSet("a result that lost a race", st.take(), 1)
	if n := lost.Load(); n != 1 {
		t.Errorf("%d lost races, want 1", n)
	}
	if len(r.Updated) != 1 || r.Seqs == nil || r.LastSeq != r.CompactionSeq {
		t.Fatalf("the result that lost a race: %+v", r)
	}
	// A pop of the result, and the result sent again, take the working
	// set from the cache too.
	appendMsgs(callMsg("c4"))
	appendMsgs(resultMsg("c4", "four"))
	st.take()
	if p, err := svc.Pop(ctx, PopRequest{Tenant: "t", SessionID: "s"}); err != nil || p.Rest == nil {
		t.Fatalf("pop: %+v, %v", p, err)
	}
	appendMsgs(resultMsg("c4", "four again"))
	noWorkingSet("a pop and a result", st.take(), 0)
	if n := rec.count("reload"); n != 0 {
		t.Errorf("%d reloads of the cached memory", n)
	}
	// The cache holds what the log gives.
	cached, err := svc.History(ctx, HistoryRequest{Tenant: "t", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := base.Read(ctx, store.ReadRequest{Tenant: "t", SessionID: "s", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := encodeSteps(t, cached.Steps), encodeSteps(t, fresh.Steps); got != want || cached.LastSeq != fresh.Session.LastSeq {
		t.Errorf("the cached working set (seq %d) is not the log's (seq %d):\n%s\nwant\n%s", cached.LastSeq, fresh.Session.LastSeq, got, want)
	}
	if err := svc.CheckCache(); err != nil {
		t.Error(err)
	}
}

// encodeSteps encodes steps as the log does, one a line.
func encodeSteps(t *testing.T, steps []agentmem.Step) string {
	t.Helper()
	var b strings.Builder
	for _, s := range steps {
		e, err := store.EncodeStep(s)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(e)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestCachedMessagesMatchStore sends the same requests, one at a time,
// to two sessions: through the service, which folds them against its
// cached working set, and through Service.AppendMessages, which reads the
// working set from the store each time. The answers (or errors) and the
// logs, entry by entry as encoded, are the same: pending calls, results
// sent alone, repeated and conflicting results, unknown calls, flushes,
// idempotency keys (retries and reuse), conditional appends and pops.
func TestCachedMessagesMatchStore(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	svc, err := New(Config{Store: st, Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"svc", "store"} {
		if _, err := st.Create(ctx, store.CreateRequest{Tenant: "t", ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]int{}
	newID := func(sess string) func() string {
		return func() string { ids[sess]++; return fmt.Sprintf("m%d", ids[sess]) }
	}
	type step struct {
		msgs     []agentmem.Message
		flush    bool
		key      string
		expected *int64
		pop      bool
	}
	seq := func(n int64) *int64 { return &n }
	user := agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("Find the bug.")}
	steps := []step{
		{msgs: []agentmem.Message{{Role: agentmem.RoleSystem, Content: agentmem.Text("You are terse.")}, user}},
		{msgs: []agentmem.Message{callMsg("a", "b")}},
		{msgs: []agentmem.Message{resultMsg("a", "first")}},
		{msgs: []agentmem.Message{resultMsg("a", "first")}},  // repeated: stores nothing
		{msgs: []agentmem.Message{resultMsg("a", "other")}},  // conflicts
		{msgs: []agentmem.Message{resultMsg("zz", "none")}},  // no such call
		{msgs: []agentmem.Message{resultMsg("b", "second")}}, // completes the action
		{msgs: []agentmem.Message{callMsg("c")}},
		{msgs: []agentmem.Message{user}}, // the call waits
		{msgs: []agentmem.Message{resultMsg("c", "late"), {Role: agentmem.RoleAssistant, Content: agentmem.Text("Done with c.")}}, key: "k1"},
		{msgs: []agentmem.Message{resultMsg("c", "late"), {Role: agentmem.RoleAssistant, Content: agentmem.Text("Done with c.")}}, key: "k1"}, // a retry
		{msgs: []agentmem.Message{resultMsg("c", "changed")}, key: "k1"},                                                                      // the key reused
		{msgs: []agentmem.Message{callMsg("d", "e")}},
		{msgs: []agentmem.Message{resultMsg("d", "dee")}, expected: seq(3)}, // a stale position
		{msgs: []agentmem.Message{user}, flush: true},                       // answers e with an error
		{msgs: []agentmem.Message{callMsg("f")}},
		{msgs: []agentmem.Message{resultMsg("f", "eff")}},
		{pop: true}, // the result of f: its call is pending again
		{msgs: []agentmem.Message{resultMsg("f", "eff again")}},
		{pop: true},
		{pop: true}, // the whole action
		{msgs: []agentmem.Message{callMsg("g"), resultMsg("g", "in one request")}},
		{msgs: []agentmem.Message{resultMsg("g", "in one request")}, key: "k2"}, // repeated, with a key
	}
	answer := func(sess string, s step) string {
		var out any
		var err error
		if s.pop {
			req := PopRequest{Tenant: "t", SessionID: sess}
			if sess == "svc" {
				out, err = svc.Pop(ctx, req)
			} else {
				out, err = pop(ctx, st, newStoreWorkingSets(st), req)
			}
		} else {
			req := MessagesRequest{Tenant: "t", SessionID: sess, Messages: s.msgs, Flush: s.flush, IdempotencyKey: s.key,
				ExpectedLastSeq: s.expected, NewID: newID(sess), Now: func() time.Time { return t0 }}
			if sess == "svc" {
				out, err = svc.AppendMessages(ctx, req)
			} else {
				out, err = appendMessages(ctx, st, newStoreWorkingSets(st), req)
			}
		}
		if err != nil {
			var rc *agentmem.ResultConflictError
			return fmt.Sprintf("error %T %v (conflict %v, invalid %v, result conflict %v)", errors.Unwrap(err), strings.ReplaceAll(err.Error(), `"`+sess+`"`, "SESSION"),
				errors.Is(err, agentmem.ErrConflict), errors.Is(err, agentmem.ErrInvalid), errors.As(err, &rc))
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for i, s := range steps {
		got, want := answer("svc", s), answer("store", s)
		if got != want {
			t.Errorf("request %d: the service answered\n%s\nthe store\n%s", i, got, want)
		}
	}
	logOf := func(sess string) []string {
		r, err := st.Read(ctx, store.ReadRequest{Tenant: "t", SessionID: sess})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range r.Entries {
			var body []byte
			if e.Step != nil {
				body, err = store.EncodeStep(e.Step)
			} else {
				body, err = store.EncodeCompaction(e.Compaction)
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d %s %s %s", e.Seq, e.Kind, e.Time.Format(time.RFC3339Nano), body))
		}
		return out
	}
	got, want := logOf("svc"), logOf("store")
	if len(got) != len(want) {
		t.Errorf("the service's log has %d entries, the store's %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("entry %d:\n%s\nwant\n%s", i, got[i], want[i])
		}
	}
	if len(want) < 15 {
		t.Fatalf("the log has only %d entries: the requests did not run", len(want))
	}
	// The cached working set is the log's.
	h, err := svc.History(ctx, HistoryRequest{Tenant: "t", SessionID: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := st.Read(ctx, store.ReadRequest{Tenant: "t", SessionID: "svc", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := encodeSteps(t, h.Steps), encodeSteps(t, ws.Steps); a != b {
		t.Errorf("the cached working set\n%s\nis not the log's\n%s", a, b)
	}
	if !bytes.Contains([]byte(strings.Join(want, "\n")), []byte(`"amend":true`)) {
		t.Error("no amendment in the log")
	}
}
