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
	"github.com/agentmem/agentmem/tokenizer"
)

// wordSession writes a session of a system prompt, a task and n actions,
// long of which (spread evenly, from the first) have a tool result of one
// unbroken word of wordBytes characters, each different, and the others
// a short result.
func wordSession(t testing.TB, st *store.Store, id string, n, long, wordBytes int) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{ID: id}); err != nil {
		t.Fatal(err)
	}
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{Content: "You are a careful coding agent."},
		&agentmem.TaskStep{Task: "Read every file of the repository."},
	}
	every := max(1, n/max(1, long))
	for i := range n {
		call := fmt.Sprintf("call_%d", i)
		result := fmt.Sprintf("file %d is short", i)
		if long > 0 && i%every == 0 && i/every < long {
			// A word of its own (a number, then one letter repeated:
			// the most a tokenizer merges), so no two count alike.
			result = fmt.Sprintf("%05d", i) + strings.Repeat(string(rune('a'+i%26)), wordBytes-5)
		}
		steps = append(steps, &agentmem.ActionStep{
			ModelOutput: fmt.Sprintf("Reading file %d.", i),
			ToolCalls:   []agentmem.ToolCall{{ID: call, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, i)}},
			Results:     []agentmem.ToolResult{{CallID: call, Content: result}},
		})
	}
	for i, s := range steps {
		steps[i] = agentmem.WithInfo(s, agentmem.StepInfo{ID: fmt.Sprintf("%s-%d", id, i)})
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: steps}); err != nil {
		t.Fatal(err)
	}
}

// longestRun is the length of the longest run of one repeated byte in s:
// the longest of wordSession's words a page shows.
func longestRun(s string) int {
	best, run := 0, 0
	for i := range len(s) {
		if i > 0 && s[i] == s[i-1] {
			run++
		} else {
			run = 1
		}
		best = max(best, run)
	}
	return best
}

// The session of the issue: 846 log entries, 150 of whose tool results
// are one word of 20,000 characters.
const (
	issueActions = 844
	issueLong    = 150
	issueWord    = 20_000
)

// TestSessionPageLongWordsBounded opens the timeline of a session whose
// tool results are long unbroken words: the page shows one page of
// entries with a link to the next, each word cut to MaxShownWord with a
// mark, and its size does not depend on the words' length.
func TestSessionPageLongWordsBounded(t *testing.T) {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	// The heuristic tokenizer: what a page shows and links to does not
	// depend on the tokenizer, and BPE on these words is slow under the
	// race detector (BenchmarkSessionPage measures it).
	in, err := inspector.New(inspector.Config{Store: st, DefaultTokenizer: tokenizer.Heuristic})
	if err != nil {
		t.Fatal(err)
	}
	wordSession(t, st, "short-words", issueActions, issueLong, 2_000)
	wordSession(t, st, "long-words", issueActions, issueLong, issueWord)
	sizes := map[string]int{}
	for _, id := range []string{"short-words", "long-words"} {
		var seqs []int64
		next := "/sessions/" + id
		for pages := 0; next != ""; pages++ {
			if pages > 5 {
				t.Fatalf("%s: paging does not end", id)
			}
			body := mustGet(t, in, next, http.StatusOK)
			if pages == 0 {
				sizes[id] = len(body)
			}
			rows := timeline(t, body)
			if len(rows) > inspector.DefaultTimelinePage {
				t.Errorf("%s: a page of %d entries", next, len(rows))
			}
			if n := longestRun(body); n > inspector.MaxShownWord {
				t.Errorf("%s: a word of %d bytes is shown whole", next, n)
			}
			for _, r := range rows {
				seqs = append(seqs, r.seq)
			}
			next = ""
			if m := regexp.MustCompile(`id="next-page" href="([^"]*)"`).FindStringSubmatch(body); m != nil {
				next = html.UnescapeString(m[1])
				if len(rows) != inspector.DefaultTimelinePage {
					t.Errorf("%s: a page of %d entries that is not the last", next, len(rows))
				}
			}
			if pages == 0 {
				if next != "/sessions/"+id+"?after="+strconv.Itoa(inspector.DefaultTimelinePage) {
					t.Errorf("%s: the first page links to %q for the next", id, next)
				}
				if !strings.Contains(body, `<span class="cut">`) {
					t.Errorf("%s: no mark where a word is cut", id)
				}
			}
		}
		if len(seqs) != issueActions+2 || seqs[0] != 1 || seqs[len(seqs)-1] != issueActions+2 {
			t.Errorf("%s: the pages listed %d entries, want every one of %d once", id, len(seqs), issueActions+2)
		}
	}
	// Words ten times longer make the page no larger (but for the digits
	// of the marks' counts).
	if sizes["long-words"] > sizes["short-words"]+sizes["short-words"]/100 {
		t.Errorf("the first page is %d bytes with words of %d characters, %d with words of 2,000", sizes["long-words"], issueWord, sizes["short-words"])
	}
}

// TestContextPageLongSessionPaged opens what the model saw at the end of
// the session of the issue, without a budget: every step fits the
// maximum context, and the page shows one page of its messages and of
// its log, with links to the others, each word cut; its size is bounded
// however long the words.
func TestContextPageLongSessionPaged(t *testing.T) {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	in, err := inspector.New(inspector.Config{Store: st, DefaultTokenizer: tokenizer.Heuristic}) // see TestSessionPageLongWordsBounded
	if err != nil {
		t.Fatal(err)
	}
	wordSession(t, st, "long-words", issueActions, issueLong, issueWord)
	messages := 2 + 2*issueActions // the system prompt, the task, each action's call and result
	pages := (messages + inspector.ContextPage - 1) / inspector.ContextPage
	body := mustGet(t, in, "/sessions/long-words/context", http.StatusOK)
	if got := len(sentMessages(body)); got != inspector.ContextPage {
		t.Errorf("the first page shows %d messages, want %d", got, inspector.ContextPage)
	}
	if !strings.Contains(body, fmt.Sprintf(`<p class="pageinfo" id="messages-page">messages <b>1–%d</b> of <b>%d</b> · page 1 of %d</p>`, inspector.ContextPage, messages, pages)) {
		t.Error("the page does not say which messages it shows")
	}
	next := regexp.MustCompile(`id="next-messages" href="([^"]*)"`).FindStringSubmatch(body)
	if next == nil || html.UnescapeString(next[1]) != "/sessions/long-words/context?page=2" {
		t.Fatalf("no link to the next page of messages: %v", next)
	}
	last := regexp.MustCompile(`id="last-messages" href="([^"]*)"`).FindStringSubmatch(body)
	if last == nil || html.UnescapeString(last[1]) != "/sessions/long-words/context?page="+strconv.Itoa(pages) {
		t.Fatalf("no link to the last page of messages: %v", last)
	}
	if got := statusesOf(body); len(got) != inspector.ContextLogPage || got[int64(issueActions+2)] != inspector.StatusShown {
		t.Errorf("the log lists %d entries (the newest: %q), want the newest %d", len(got), got[int64(issueActions+2)], inspector.ContextLogPage)
	}
	older := regexp.MustCompile(`id="older-log" href="([^"]*)"`).FindStringSubmatch(body)
	wantOlder := fmt.Sprintf("/sessions/long-words/context?before=%d", issueActions+2-inspector.ContextLogPage+1)
	if older == nil || html.UnescapeString(older[1]) != wantOlder {
		t.Fatalf("the log links to %v for older entries, want %s", older, wantOlder)
	}
	bound := inspector.ContextPage*(inspector.MaxShownText+2<<10) + inspector.ContextLogPage<<10 + inspector.MaxWireBytes + 64<<10
	if len(body) > bound || longestRun(body) > inspector.MaxShownWord {
		t.Errorf("the first page is %d bytes (bound %d), its longest word %d bytes", len(body), bound, longestRun(body))
	}

	// The last page of messages holds the rest, and links back.
	body = mustGet(t, in, html.UnescapeString(last[1]), http.StatusOK)
	if got, want := len(sentMessages(body)), messages-(pages-1)*inspector.ContextPage; got != want {
		t.Errorf("the last page shows %d messages, want %d", got, want)
	}
	if strings.Contains(body, `id="next-messages"`) || !strings.Contains(body, `id="prev-messages"`) {
		t.Error("the last page of messages links to a next page, or not to the previous one")
	}
	// The older entries of the log, and a link back to the newest.
	body = mustGet(t, in, wantOlder, http.StatusOK)
	got := statusesOf(body)
	if len(got) != inspector.ContextLogPage || got[int64(issueActions+2-inspector.ContextLogPage)] == "" || got[int64(issueActions+2-inspector.ContextLogPage+1)] != "" {
		t.Errorf("the older page of the log lists %d entries, not the %d before #%d", len(got), inspector.ContextLogPage, issueActions+2-inspector.ContextLogPage+1)
	}
	if !strings.Contains(body, `id="newest-log" href="/sessions/long-words/context"`) {
		t.Error("the older page of the log does not link to the newest entries")
	}
	// A page past the last is refused.
	body = mustGet(t, in, "/sessions/long-words/context?page="+strconv.Itoa(pages+1), http.StatusBadRequest)
	if !strings.Contains(html.UnescapeString(body), fmt.Sprintf("page: is %d; this context's messages fill %d pages", pages+1, pages)) {
		t.Error("the error page does not say why the page was refused")
	}
}

// TestSizeChartBoundedInText opens the first page of a session whose log
// holds more text than the chart of context sizes counts: the page says
// so rather than drawing it.
func TestSizeChartBoundedInText(t *testing.T) {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	in, err := inspector.New(inspector.Config{Store: st, TimelinePage: 2})
	if err != nil {
		t.Fatal(err)
	}
	const resultBytes = 256 << 10
	longSession(t, st, "large", inspector.MaxChartBytes/resultBytes+4, resultBytes)
	longSession(t, st, "small", 4, resultBytes)
	body := mustGet(t, in, "/sessions/large", http.StatusOK)
	note := regexp.MustCompile(`<p class="note" id="context-sizes-note">(.*?)</p>`).FindStringSubmatch(body)
	if strings.Contains(body, `id="context-chart"`) || note == nil || !strings.Contains(note[1], "more than 4 MiB of text") {
		t.Errorf("the page of a log of %d bytes of results draws the chart, or does not say why not: %v", (inspector.MaxChartBytes/resultBytes+4)*resultBytes, note)
	}
	if body := mustGet(t, in, "/sessions/small", http.StatusOK); !strings.Contains(body, `id="context-chart"`) {
		t.Error("the page of a small log has no chart")
	}
}

// TestRecallLongHitBounded searches a recall source whose hit is a long
// word between two matching words: the page shows the word cut, the
// matches marked, and is small.
func TestRecallLongHitBounded(t *testing.T) {
	text := "migration " + strings.Repeat("x", issueWord) + " migration done"
	src := testRecallSource{docs: []recallDoc{{hit: inspector.HitView{ID: "d1", Text: text}, terms: map[string]bool{"migration": true}}}}
	in, err := inspector.New(inspector.Config{Store: memstore.New(memstore.Options{}), Recall: src})
	if err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, in, "/recall?q=migration", http.StatusOK)
	if strings.Count(body, "<mark>migration</mark>") != 2 || !strings.Contains(body, `<span class="cut">`) {
		t.Error("the hit does not show both matches and the word cut between them")
	}
	if n := longestRun(body); n > inspector.MaxShownWord || len(body) > 16<<10 {
		t.Errorf("the page is %d bytes, its longest word %d", len(body), n)
	}
}
