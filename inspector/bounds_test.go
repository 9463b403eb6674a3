package inspector_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// longSession writes a session of a system prompt, a task and n actions
// whose results are resultBytes long.
func longSession(t *testing.T, st *store.Store, id string, n, resultBytes int) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{ID: id}); err != nil {
		t.Fatal(err)
	}
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{Content: "You are a careful coding agent."},
		&agentmem.TaskStep{Task: "Read every file of the repository."},
	}
	for i := range n {
		call := fmt.Sprintf("call_%d", i)
		line := fmt.Sprintf("line %d of file %d\n", i, i)
		steps = append(steps, &agentmem.ActionStep{
			ModelOutput: fmt.Sprintf("Reading file %d.", i),
			ToolCalls:   []agentmem.ToolCall{{ID: call, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, i)}},
			Results:     []agentmem.ToolResult{{CallID: call, Content: strings.Repeat(line, resultBytes/len(line)+1)[:resultBytes]}},
		})
	}
	for i, s := range steps {
		steps[i] = agentmem.WithInfo(s, agentmem.StepInfo{ID: fmt.Sprintf("%s-%d", id, i)})
	}
	for len(steps) > 0 {
		k := min(len(steps), 500)
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: steps[:k]}); err != nil {
			t.Fatal(err)
		}
		steps = steps[k:]
	}
}

// counts reads the status counts of a "what the model saw" page.
func counts(t *testing.T, body string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`<span class="status status-([a-z]+)">[a-z]+ (\d+)</span>`).FindAllStringSubmatch(body, -1) {
		out[m[1]], _ = strconv.Atoi(m[2])
	}
	return out
}

// TestWhatTheModelSawLongSessionIsBounded opens the "what the model saw"
// page of long sessions without a budget: the context is fitted to the
// maximum (as the library fits it to that budget), the page says what was
// left out, its log lists the newest ContextLogPage entries with a note
// and a link for the others, and its size does not grow with the log.
func TestWhatTheModelSawLongSessionIsBounded(t *testing.T) {
	const maxTokens = 3000
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	in, err := inspector.New(inspector.Config{Store: st, MaxContextTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[int]int{}
	for _, n := range []int{1500, 3000} {
		id := fmt.Sprintf("long-%d", n)
		longSession(t, st, id, n, 400)
		body := mustGet(t, in, "/sessions/"+id+"/context", http.StatusOK)
		sizes[n] = len(body)
		lib, ws := libContext(t, st, id, 0, agentmem.ContextOptions{Budget: maxTokens, Counter: o200k(t)})
		if m := regexp.MustCompile(`<b id="ctx-tokens">(\d+)</b>`).FindStringSubmatch(body); m == nil || m[1] != strconv.Itoa(lib.Tokens) {
			t.Errorf("%s: context tokens %v, want the library's %d under a budget of the maximum", id, m, lib.Tokens)
		}
		if got := len(sentMessages(body)); got != len(lib.Messages) {
			t.Errorf("%s: %d messages shown, the library sends %d", id, got, len(lib.Messages))
		}
		note := regexp.MustCompile(`<div class="note" id="context-capped">.*?</div>`).FindString(body)
		if !strings.Contains(note, "maximum context of <b>3000</b> tokens") || !strings.Contains(note, fmt.Sprintf("<b>%d</b> older steps", lib.DroppedSteps)) {
			t.Errorf("%s: the page does not say the context was capped: %q", id, note)
		}
		// The newest ContextLogPage entries are listed, with their
		// statuses; the counts cover every entry.
		got := statusesOf(body)
		want := expectedStatuses(t, st, id, 0, lib, ws)
		entries := n + 2
		if len(got) != inspector.ContextLogPage {
			t.Errorf("%s: %d log rows, want %d", id, len(got), inspector.ContextLogPage)
		}
		for seq := int64(entries - inspector.ContextLogPage + 1); seq <= int64(entries); seq++ {
			if got[seq] != want[seq] {
				t.Errorf("%s: step %d is %q, want %q", id, seq, got[seq], want[seq])
			}
		}
		c := counts(t, body)
		if c["shown"] != len(lib.Steps) || c["pruned"] != lib.DroppedSteps || c["shown"]+c["pruned"] != entries {
			t.Errorf("%s: counts %v; the library shows %d steps and drops %d", id, c, len(lib.Steps), lib.DroppedSteps)
		}
		hidden := regexp.MustCompile(`<p class="note" id="log-hidden">(.*?)</p>`).FindStringSubmatch(body)
		if hidden == nil || !strings.Contains(hidden[1], fmt.Sprintf("This page lists <b>%d</b> of the log's %d entries: <b>%d</b> older ones are not listed here.", inspector.ContextLogPage, entries, entries-inspector.ContextLogPage)) ||
			!strings.Contains(body, fmt.Sprintf(`id="older-log" href="/sessions/%s/context?before=%d"`, id, entries-inspector.ContextLogPage+1)) {
			t.Errorf("%s: no note on the entries left out of the log, or no link to them: %v", id, hidden)
		}
	}
	// A budget that shows more of the log: the wire JSON is left out
	// beyond MaxWireBytes, with a note.
	body := mustGet(t, in, "/sessions/long-3000/context?budget="+strconv.Itoa(maxTokens), http.StatusOK)
	if !strings.Contains(body, `class="wire"`) || strings.Contains(body, `id="wire-omitted"`) {
		t.Error("a small context's page lacks its wire JSON")
	}
	big, err := inspector.New(inspector.Config{Store: st, MaxContextTokens: inspector.MaxBudget})
	if err != nil {
		t.Fatal(err)
	}
	body = mustGet(t, big, "/sessions/long-3000/context", http.StatusOK)
	if strings.Contains(body, `class="wire"`) || !regexp.MustCompile(`<p class="note" id="wire-omitted">The request body in openai wire JSON \(at least \d+ bytes\) is too large to show here`).MatchString(body) {
		t.Error("the page of a large context shows its wire JSON, or does not say it left it out")
	}
	if sizes[3000] > sizes[1500]*11/10 {
		t.Errorf("the page grows with the log: %d bytes for 1,500 steps, %d for 3,000", sizes[1500], sizes[3000])
	}
	// With a budget within the maximum, there is no note.
	body = mustGet(t, in, "/sessions/long-1500/context?budget=3000", http.StatusOK)
	if strings.Contains(body, `id="context-capped"`) {
		t.Error("a page with a budget says it was capped")
	}
	// A budget over the maximum is refused.
	body = mustGet(t, in, "/sessions/long-1500/context?budget=3001", http.StatusBadRequest)
	if !strings.Contains(html.UnescapeString(body), "budget: is 3001 tokens, more than this server's maximum context of 3000 tokens") {
		t.Error("the error page does not say why the budget was refused")
	}
}

// TestSessionTimelinePagesBoundedInBytes pages a session of large steps:
// a page ends once its messages reach MaxTimelineBytes, says so, and the
// pages together show every entry once.
func TestSessionTimelinePagesBoundedInBytes(t *testing.T) {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	in, err := inspector.New(inspector.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	const steps, resultBytes = 16, 600 << 10
	longSession(t, st, "large", steps, resultBytes)
	perPage := inspector.MaxTimelineBytes/resultBytes + 1 // the step that reaches the bound is shown
	var seqs []int64
	next := "/sessions/large?tokenizer=heuristic"
	for pages := 0; next != ""; pages++ {
		if pages > steps {
			t.Fatal("paging does not end")
		}
		body := mustGet(t, in, next, http.StatusOK)
		rows := timeline(t, body)
		if len(body) > inspector.MaxTimelineBytes+2*resultBytes {
			t.Errorf("%s: a page of %d bytes", next, len(body))
		}
		for _, r := range rows {
			seqs = append(seqs, r.seq)
		}
		next = ""
		if m := regexp.MustCompile(`id="next-page" href="([^"]*)"`).FindStringSubmatch(body); m != nil {
			next = html.UnescapeString(m[1])
			full := strings.Contains(body, `<p class="note" id="page-full">This page ends after `+strconv.Itoa(len(rows))+` entries: their messages reach 4 MiB`)
			if !full || len(rows) > perPage+2 {
				t.Errorf("a page of %d entries that is not the last: note %v", len(rows), full)
			}
		}
	}
	want := make([]int64, steps+2)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if fmt.Sprint(seqs) != fmt.Sprint(want) {
		t.Errorf("the pages showed %v, want every entry once, in order", seqs)
	}
}
