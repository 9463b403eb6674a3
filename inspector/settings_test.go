package inspector_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// TestSessionSettings: the session's page shows its pinning and its
// automatic compaction, and what the model saw (the page of a call, and
// the chart of every call's size) pins what the session pins: a chat that
// pins only its system prompt loses its first question under a small
// budget, a session of the default pinning keeps it.
func TestSessionSettings(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	ctx := context.Background()
	chat := func(id string, pin *agentmem.Pinning, auto *store.AutoCompact) {
		t.Helper()
		if _, err := f.st.Create(ctx, store.CreateRequest{ID: id, Pinning: pin, AutoCompact: auto}); err != nil {
			t.Fatal(err)
		}
		msgs := []agentmem.Message{{Role: agentmem.RoleSystem, Content: agentmem.Text("You are terse.")}}
		for i := range 6 {
			msgs = append(msgs,
				agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(fmt.Sprintf("Q%d: the weather in city %d?", i, i))},
				agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text(fmt.Sprintf("A%d: ", i) + strings.Repeat("mild and dry ", 30))})
		}
		if _, err := newStoreService(t, f.st).AppendMessages(ctx, sessions.MessagesRequest{SessionID: id, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	chat("chat", &agentmem.Pinning{SystemPrompts: true}, &store.AutoCompact{MaxTokens: 8000, TargetTokens: 4000, KeepRecent: 6, Summarizer: store.SummarizerExtractive})
	chat("run", nil, nil)
	for id, want := range map[string][]string{
		"chat": {"<dt>pinned</dt><dd>system prompts</dd>", "<dt>auto-compact</dt><dd>past 8000 tokens, down to 4000, keeping the newest 6 steps, extractive summaries</dd>"},
		"run":  {`<dt>pinned</dt><dd>system prompts, first task, summary <span class="muted">(the default)</span></dd>`, `<dt>auto-compact</dt><dd><span class="muted">off</span></dd>`},
	} {
		body := mustGet(t, f.in, "/sessions/"+id, http.StatusOK)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("the page of %s lacks %s", id, w)
			}
		}
		// Step #2 is Q0.
		wantStatus := map[string]string{"chat": inspector.StatusPruned, "run": inspector.StatusShown}[id]
		ctxPage := mustGet(t, f.in, "/sessions/"+id+"/context?budget=300", http.StatusOK)
		if !strings.Contains(ctxPage, `data-seq="2" data-status="`+wantStatus+`"`) {
			t.Errorf("%s: what the model saw at budget 300 does not mark Q0 %s", id, wantStatus)
		}
	}
}
