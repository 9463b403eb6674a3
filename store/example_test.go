package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

// An agent's memory bound to a session: every add is written through, and
// a process that opens the session again resumes from its working set.
func ExampleOpenMemory() {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://") // "sqlite:///path/to/file.db" for a durable one
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "run-1", Agent: "researcher"}); err != nil {
		log.Fatal(err)
	}

	opts := agentmem.Options{Counter: tokenizer.NewHeuristic()}
	m, err := store.OpenMemory(ctx, st, "run-1", opts)
	if err != nil {
		log.Fatal(err)
	}
	_, _ = m.Add(ctx, &agentmem.SystemPromptStep{Content: "You are a researcher."})
	_, _ = m.Add(ctx, &agentmem.TaskStep{Task: "Find the boiling point of water."})
	for range 4 {
		_, _ = m.Add(ctx, &agentmem.ActionStep{Thought: "search", Observation: "100 °C at sea level"})
	}
	// Compaction is written through too: the log keeps the originals.
	if _, err := m.SetSummary(ctx, "Searched four times: 100 °C at sea level.", 1); err != nil {
		log.Fatal(err)
	}

	// Later, or in another process: resume from the working set.
	resumed, err := store.OpenMemory(ctx, st, "run-1", opts)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range resumed.Steps() {
		fmt.Println(s.Info().Number, s.Kind())
	}
	all, _ := st.Read(ctx, store.ReadRequest{SessionID: "run-1"})
	fmt.Println("log entries:", len(all.Entries))
	// Output:
	// 1 system_prompt
	// 2 task
	// 7 summary
	// 6 action
	// log entries: 8
}

// Export writes a session as JSONL; Import recreates it elsewhere with the
// same sequence numbers and step JSON.
func ExampleExport() {
	ctx := context.Background()
	src := memstore.New(memstore.Options{})
	_, _ = src.Create(ctx, store.CreateRequest{ID: "chat-42"})
	_, _ = src.Append(ctx, store.AppendRequest{SessionID: "chat-42", Steps: []agentmem.Step{
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "step-1"}, Task: "hello"},
	}})

	var buf bytes.Buffer
	if err := store.Export(ctx, src, "", "chat-42", &buf); err != nil {
		log.Fatal(err)
	}
	dst := memstore.New(memstore.Options{})
	s, err := store.Import(ctx, dst, bytes.NewReader(buf.Bytes()), store.ImportOptions{})
	if err != nil {
		log.Fatal(err)
	}
	resp, _ := dst.Read(ctx, store.ReadRequest{SessionID: s.ID})
	step, _ := store.EncodeStep(resp.Entries[0].Step)
	fmt.Println(s.ID, resp.Entries[0].Seq, string(step))
	// Output:
	// chat-42 1 {"type":"task","number":1,"id":"step-1","task":"hello"}
}

// A consumer of the change feed: it registers its durable cursor, reads
// the changes after it in commit order, and saves the cursor once it has
// applied them, so that after a crash it resumes where it stopped.
func ExampleFeed() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	feed, ok := st.Feed() // every backend has one
	if !ok {
		log.Fatal("no change feed")
	}

	cur, err := feed.LoadCursor(ctx, "printer")
	if err != nil {
		log.Fatal(err)
	}
	if err := feed.SaveCursor(ctx, "printer", cur); err != nil { // register before the first read
		log.Fatal(err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "run-1", Tenant: "acme"}); err != nil {
		log.Fatal(err)
	}
	task := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t1"}, Task: "Find the bug"}
	if _, err := st.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "run-1", Steps: []agentmem.Step{task}}); err != nil {
		log.Fatal(err)
	}
	if err := st.Delete(ctx, "acme", "run-1"); err != nil {
		log.Fatal(err)
	}

	resp, err := feed.ReadFeed(ctx, store.FeedRequest{After: cur})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range resp.Changes {
		fmt.Println(c.Kind, c.Tenant, c.SessionID, c.Seq, c.Entry != nil)
	}
	if err := feed.SaveCursor(ctx, "printer", resp.Next); err != nil {
		log.Fatal(err)
	}
	// Output:
	// append acme run-1 1 false
	// delete acme run-1 0 false
}

// A driver that changes one method of another, as a test double does,
// becomes a store with New: the portable type checks requests before the
// driver sees them, and finds what the driver can do beyond the eight
// methods of Driver.
func ExampleNew() {
	ctx := context.Background()
	st := store.New(readOnly{memstore.NewDriver(memstore.Options{})})
	defer st.Close()

	_, err := st.Get(ctx, "", "..") // refused before the driver sees it
	fmt.Println(errors.Is(err, agentmem.ErrInvalid))
	_, err = st.Create(ctx, store.CreateRequest{ID: "run-1"})
	fmt.Println(err)
	_, hasFeed := st.Feed()
	fmt.Println(hasFeed, st.Supports(store.CanPing))
	var d readOnly
	fmt.Println(st.As(&d))
	// Output:
	// true
	// read-only
	// false false
	// true
}

// readOnly is a driver that refuses to create sessions. It embeds only
// the Driver interface, so it has none of the optional capabilities of
// the driver it wraps.
type readOnly struct{ store.Driver }

func (readOnly) Create(context.Context, store.CreateRequest) (*store.Session, error) {
	return nil, errors.New("read-only")
}

// A driver whose errors come from elsewhere (a database, a network)
// says their class in ClassifyError, once; the portable store wraps each
// error with its class, so callers test the class and still reach the
// driver's own error.
func ExampleErrorClassifier() {
	ctx := context.Background()
	st := store.New(busyDriver{memstore.NewDriver(memstore.Options{})})
	defer st.Close()

	_, err := st.Get(ctx, "", "run-1")
	fmt.Println(errors.Is(err, agentmem.ErrUnavailable))
	var busy *busyError
	fmt.Println(errors.As(err, &busy), err)
	// Output:
	// true
	// true server busy, retry in 2s
}

// busyError is the error of busyDriver's backend.
type busyError struct{ retryIn string }

func (e *busyError) Error() string { return "server busy, retry in " + e.retryIn }

// busyDriver is a driver whose reads fail with its backend's own error.
type busyDriver struct{ store.Driver }

func (busyDriver) Get(context.Context, string, string) (*store.Session, error) {
	return nil, &busyError{retryIn: "2s"}
}

// ClassifyError implements store.ErrorClassifier: a busy backend is
// unavailable for now.
func (busyDriver) ClassifyError(err error) error {
	var busy *busyError
	if errors.As(err, &busy) {
		return agentmem.ErrUnavailable
	}
	return nil
}

// The seeds' ConversationStore: save a conversation, load it back, list
// the tenant's conversations; a missing one loads empty.
func ExampleConversations() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	convs := store.Conversations{Store: st, Tenant: "acme"}

	err := convs.SaveMessages(ctx, "session-abc", []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("Hello, how are you?")},
		{Role: agentmem.RoleAssistant, Content: agentmem.Text("Fine, thanks.")},
	})
	if err != nil {
		log.Fatal(err)
	}
	snap, err := convs.Load(ctx, "session-abc")
	if err != nil {
		log.Fatal(err)
	}
	mem := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic()})
	if err := mem.Restore(snap); err != nil {
		log.Fatal(err)
	}
	for _, m := range mem.Messages(agentmem.RenderOptions{}) {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	ids, _ := convs.List(ctx)
	fmt.Println(ids)
	missing, _ := convs.Load(ctx, "nobody")
	fmt.Println(len(missing.Steps), "steps in a missing conversation")
	// Output:
	// user: Hello, how are you?
	// assistant: Fine, thanks.
	// [session-abc]
	// 0 steps in a missing conversation
}

// Each agent of a run gets its own memory, created the first time it is
// asked for (the seeds' MemoryManager.get_memory).
func ExampleAgents() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "run-7"}); err != nil {
		log.Fatal(err)
	}
	agents, err := store.OpenAgents(ctx, st, "", "run-7", agentmem.Options{Counter: tokenizer.NewHeuristic()})
	if err != nil {
		log.Fatal(err)
	}
	defer agents.Close(ctx)
	planner, err := agents.Memory(ctx, "planner")
	if err != nil {
		log.Fatal(err)
	}
	_ = planner.AddUser(ctx, "Plan the release.")
	if _, err := agents.Memory(ctx, "coder"); err != nil {
		log.Fatal(err)
	}
	names, _ := agents.List(ctx)
	fmt.Println(names, planner.Session().ID)
	// Output: [coder planner] run-7.planner
}
