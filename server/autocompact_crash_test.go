package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views/autocompact"
)

// TestKillDuringAutoCompaction runs `agentmem serve` on SQLite with an LLM
// summarizer that holds its first request, appends to a session with
// automatic compaction until the compaction is under way, goes on
// appending, kills the server with SIGKILL, and starts it again with the
// summarizer answering: every acknowledged append is in the log, the
// compaction resumes by itself and brings the working set under its
// trigger, and no turn is lost from it (each is kept or covered by the
// summary).
func TestKillDuringAutoCompaction(t *testing.T) {
	bin := buildBinary(t)
	storeURL := "sqlite://" + filepath.Join(t.TempDir(), "compact.db")
	var (
		mu       sync.Mutex
		answer   bool // the summarizer answers (after the restart)
		held     = make(chan struct{})
		heldOnce sync.Once
		stop     = make(chan struct{}) // closed when the test ends
	)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := answer
		mu.Unlock()
		if !ok {
			heldOnce.Do(func() { close(held) })
			select { // until the server that asked is killed, or the test ends
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"The user asked about the weather in several cities; each was mild."}}],"usage":{"prompt_tokens":10,"completion_tokens":10}}`)
	}))
	defer model.Close()
	defer close(stop)
	args := []string{"--addr", "127.0.0.1:0", "--store", storeURL, "--prune-interval", "0",
		"--llm-base-url", model.URL + "/v1", "--llm-model", "m"}
	p := startServe(t, bin, nil, args...)
	p.call(t, 201, "POST", "/v1/sessions", `{"id":"chat","pinning":{"system_prompts":true,"summary":true},"auto_compact":{"max_tokens":2000,"target_tokens":1000,"summarizer":"llm"}}`, nil)
	p.call(t, 201, "POST", "/v1/sessions/chat/messages", `{"role":"system","content":"You answer questions about the weather."}`, nil)
	turn := func(i int) {
		t.Helper()
		body := fmt.Sprintf(`[{"role":"user","content":"Q%d: the weather in city %d?"},{"role":"assistant","content":"A%d: %s"}]`, i, i, i, strings.Repeat("mild and dry. ", 40))
		p.call(t, 201, "POST", "/v1/sessions/chat/messages", body, nil)
	}
	acked := 0
	for ; acked < 100; acked++ {
		select {
		case <-held:
		default:
			turn(acked)
			continue
		}
		break
	}
	// The compactor lets appends gather for a while (autocompact.Settle)
	// before it reads them.
	select {
	case <-held:
	case <-time.After(autocompact.Settle + 30*time.Second):
		t.Fatal("100 turns did not start a compaction")
	}
	// Appends go on while the compaction waits for its summary.
	for range 5 {
		turn(acked)
		acked++
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done

	mu.Lock()
	answer = true
	mu.Unlock()
	p = startServe(t, bin, nil, args...)
	var cx api.ContextResponse
	deadline := time.Now().Add(time.Minute)
	for {
		p.call(t, 200, "GET", "/v1/sessions/chat/context", "", &cx)
		if len(cx.Summarized) > 0 && cx.Tokens <= 2000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the compaction did not resume: %d tokens, summarized %v\n%s", cx.Tokens, cx.Summarized, p.stderr)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's state, bounded by the deadline
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.done

	st, err := store.Open(context.Background(), storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log, err := st.Read(context.Background(), store.ReadRequest{SessionID: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := st.Read(context.Background(), store.ReadRequest{SessionID: "chat", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	covered := map[int64]bool{}
	for _, s := range ws.Steps {
		for _, r := range agentmem.CoveredBy(s) {
			for n := r.From; n <= r.To; n++ {
				covered[int64(n)] = true
			}
		}
	}
	asked := map[string]int64{}
	for _, e := range log.Entries {
		if task, ok := e.Step.(*agentmem.TaskStep); ok && e.Kind == store.StepEntry {
			asked[task.Task] = e.Seq
		}
	}
	for i := range acked {
		q := fmt.Sprintf("Q%d: the weather in city %d?", i, i)
		seq, ok := asked[q]
		if !ok {
			t.Fatalf("acknowledged turn %d is not in the log", i)
		}
		if !covered[seq] {
			t.Fatalf("turn %d (step %d) is neither in the working set nor covered by its summary", i, seq)
		}
	}
	t.Logf("%d turns acknowledged, %d steps in the working set after the compaction resumed", acked, len(ws.Steps))
}
