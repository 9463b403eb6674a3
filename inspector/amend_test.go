package inspector_test

import (
	"context"
	"fmt"
	"html"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/store"
)

// rowBlocks splits a timeline page into its rows' HTML, by the seq of the
// row (the last one runs on to the end of the page).
func rowBlocks(body string) map[int64]string {
	out := map[int64]string{}
	parts := strings.Split(body, `<li class="entry `)
	for _, p := range parts[1:] {
		m := regexp.MustCompile(`^[^"]*" id="e(\d+)"`).FindStringSubmatch(p)
		if m == nil {
			continue
		}
		seq, _ := strconv.ParseInt(m[1], 10, 64)
		out[seq] = p
	}
	return out
}

// arrivalsIn returns the arrival notes of a step's row: the amendment's
// seq and what the note says.
func arrivalsIn(block string) map[int64]string {
	out := map[int64]string{}
	for _, m := range regexp.MustCompile(`<span class="arrived" id="e(\d+)" data-seq="\d+">([^<]*)</span>`).FindAllStringSubmatch(block, -1) {
		seq, _ := strconv.ParseInt(m[1], 10, 64)
		out[seq] = html.UnescapeString(m[2])
	}
	return out
}

// completed applies the amendments of a log to its steps as logged: each
// step as the amendments up to entry upTo (0: all) completed it.
func completed(entries []store.Entry, upTo int64) map[int64]agentmem.Step {
	out := map[int64]agentmem.Step{}
	for _, e := range entries {
		if upTo > 0 && e.Seq > upTo {
			break
		}
		switch {
		case e.Step != nil:
			out[e.Seq] = e.Step
		case e.Compaction != nil && e.Compaction.Amend:
			for _, c := range e.Compaction.Replaced {
				out[int64(c.Info().Number)] = c
			}
		}
	}
	return out
}

// TestSessionTimelineToolResults: in a session whose tool results arrived
// in requests of their own, each result's amendment is shown in the row
// of the step it completed, with when it arrived, not as a compaction;
// the step's row shows the completed step; the one real compaction keeps
// its row and says which copies it shortened and which it only carried
// over.
func TestSessionTimelineToolResults(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	resp, err := f.st.Read(context.Background(), store.ReadRequest{SessionID: "chat-tools"})
	if err != nil {
		t.Fatal(err)
	}
	bySeq := map[int64]store.Entry{}
	for _, e := range resp.Entries {
		bySeq[e.Seq] = e
	}
	// after says how long after the step's entry the amendment's came.
	after := func(step, amend int64) string {
		d := bySeq[amend].Time.Sub(bySeq[step].Time)
		if d <= 0 || d%time.Second != 0 || d >= time.Minute {
			t.Fatalf("the fixture's delay from #%d to #%d is %v: want whole seconds under a minute", step, amend, d)
		}
		return fmt.Sprintf("+%d s", int(d.Seconds()))
	}

	body := mustGet(t, f.in, "/sessions/chat-tools", http.StatusOK)
	rows := timeline(t, body)
	var seqs []int64
	var kinds []string
	for _, r := range rows {
		seqs = append(seqs, r.seq)
		kinds = append(kinds, r.kind)
	}
	if want := []int64{seqChatSystem, seqChatTask, seqChatRead, seqChatGrep, seqChatPrune, seqChatBoth, seqChatAnswer}; !slices.Equal(seqs, want) {
		t.Fatalf("rows %v, want %v: the steps and the one real compaction", seqs, want)
	}
	if want := []string{"system_prompt", "task", "action", "action", "compaction", "action", "action"}; !slices.Equal(kinds, want) {
		t.Errorf("row kinds %q, want %q", kinds, want)
	}
	if n := strings.Count(body, `class="entry compaction"`); n != 1 {
		t.Errorf("%d compaction rows, want the one real compaction", n)
	}
	blocks := rowBlocks(body)
	for step, want := range map[int64]map[int64]string{
		seqChatRead: {seqChatReadOK: "result of read_file arrived " + after(seqChatRead, seqChatReadOK)},
		seqChatGrep: {seqChatGrepOK: "result of grep arrived " + after(seqChatGrep, seqChatGrepOK)},
		seqChatBoth: {
			seqChatTests: "result of run_tests arrived " + after(seqChatBoth, seqChatTests),
			seqChatLint:  "result of lint arrived " + after(seqChatBoth, seqChatLint),
		},
	} {
		if got := arrivalsIn(blocks[step]); !maps.Equal(got, want) {
			t.Errorf("#%d says %v, want %v", step, got, want)
		}
		if strings.Contains(blocks[step], "awaiting") {
			t.Errorf("#%d, completed on this page, is said to await its result", step)
		}
	}
	// A step's row shows the completed step: what the model sees, with
	// its results, not the call as logged (nor a compaction's shortened
	// copy).
	done := completed(resp.Entries, 0)
	c := o200k(t)
	for _, r := range rows {
		if r.kind == "compaction" {
			continue
		}
		if want := libStepTokens(t, done[r.seq], agentmem.OpenAI, c); r.tokens != want {
			t.Errorf("#%d shows %d tokens, the completed step costs %d", r.seq, r.tokens, want)
		}
	}
	if !strings.Contains(html.UnescapeString(blocks[seqChatRead]), "func TestLoginCase11") {
		t.Error("the read_file step's row does not show the result that completed it")
	}
	// The real compaction shortened #3's copy and carried #5's completed
	// copy over unchanged.
	desc := regexp.MustCompile(`<span class="cdesc">([^<]*)</span>`).FindStringSubmatch(blocks[seqChatPrune])
	if desc == nil || desc[1] != "working set of 4 steps · shortened copies of 3 · copies of 5 carried over unchanged" {
		t.Errorf("the compaction says %q", desc)
	}

	// Paged by three entries, an amendment of a step on an earlier page
	// is a light row of its own, never a compaction's, and the step's row
	// there says it awaits its result.
	p := newFixture(t, inspector.Config{TimelinePage: 3})
	pages := map[string][]timelineRow{}
	for _, q := range []string{"", "?after=3", "?after=6", "?after=9"} {
		body := mustGet(t, p.in, "/sessions/chat-tools"+q, http.StatusOK)
		pages[q] = timeline(t, body)
		for _, r := range pages[q] {
			if r.kind == "compaction" && r.seq != seqChatPrune {
				t.Errorf("%s: #%d is a compaction row", q, r.seq)
			}
		}
		switch q {
		case "":
			if b := rowBlocks(body)[seqChatRead]; !strings.Contains(b, `<span class="awaiting">awaiting its result</span>`) || len(arrivalsIn(b)) != 0 {
				t.Errorf("page 1: #3 before its result:\n%s", b)
			}
		case "?after=3":
			if b := rowBlocks(body)[seqChatReadOK]; !strings.Contains(b, `<span class="adesc">result of #3 arrived</span>`) {
				t.Errorf("page 2: the result of #3, on page 1:\n%s", b)
			}
		case "?after=9":
			if b := rowBlocks(body)[seqChatLint]; !strings.Contains(b, `<span class="adesc">results of #8 arrived</span>`) {
				t.Errorf("page 4: the last result of #8, on page 3:\n%s", b)
			}
		}
	}
	var got []string
	for _, q := range []string{"", "?after=3", "?after=6", "?after=9"} {
		for _, r := range pages[q] {
			got = append(got, fmt.Sprintf("%d:%s", r.seq, r.kind))
		}
	}
	if want := []string{"1:system_prompt", "2:task", "3:action", "4:amendment", "5:action", "7:compaction", "8:action", "10:amendment", "11:action"}; !slices.Equal(got, want) {
		t.Errorf("pages show %q, want %q", got, want)
	}
	// Page 3 holds #8 and the first of its results: it awaits the other.
	b := rowBlocks(mustGet(t, p.in, "/sessions/chat-tools?after=6", http.StatusOK))[seqChatBoth]
	if !strings.Contains(b, "awaiting its result") || len(arrivalsIn(b)) != 1 {
		t.Errorf("page 3: #8 with one of its two results:\n%s", b)
	}
}

// TestWhatTheModelSawToolResults: the "what the model saw" page of a
// session whose tool results arrived on their own is the library's
// context, its log lists the amendments in their steps' rows, not as
// compactions, and the chart's points say what each call's page says.
func TestWhatTheModelSawToolResults(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	c := o200k(t)
	for _, tc := range []struct {
		at    int64
		query string
		opts  agentmem.ContextOptions
	}{
		{seqChatGrep, "", agentmem.ContextOptions{Counter: c}},
		{seqChatBoth, "", agentmem.ContextOptions{Counter: c}},
		{seqChatAnswer, "", agentmem.ContextOptions{Counter: c}},
		{seqChatAnswer, "budget=200", agentmem.ContextOptions{Budget: 200, Counter: c}},
		{0, "", agentmem.ContextOptions{Counter: c}},
	} {
		q := tc.query
		if tc.at > 0 {
			q = fmt.Sprintf("at=%d&%s", tc.at, tc.query)
		}
		t.Run(q, func(t *testing.T) {
			body := mustGet(t, f.in, "/sessions/chat-tools/context?"+q, http.StatusOK)
			lib, ws := libContext(t, f.st, "chat-tools", tc.at, tc.opts)
			if m := regexp.MustCompile(`<b id="ctx-tokens">(\d+)</b>`).FindStringSubmatch(body); m == nil || m[1] != strconv.Itoa(lib.Tokens) {
				t.Errorf("context tokens %v, want the library's %d", m, lib.Tokens)
			}
			if got, want := statusesOf(body), expectedStatuses(t, f.st, "chat-tools", tc.at, lib, ws); !maps.Equal(got, want) {
				t.Errorf("statuses %v, want %v", got, want)
			}
			for _, seq := range []int64{seqChatReadOK, seqChatGrepOK, seqChatTests, seqChatLint} {
				if strings.Contains(body, fmt.Sprintf(`<tr class="compaction" data-seq="%d">`, seq)) {
					t.Errorf("the amendment #%d is a compaction row", seq)
				}
			}
			if real := strings.Contains(body, fmt.Sprintf(`<tr class="compaction" data-seq="%d">`, seqChatPrune)); real != (tc.at == 0 || tc.at > seqChatPrune) {
				t.Errorf("the real compaction's row shown: %v", real)
			}
			if tc.at == 0 || tc.at > seqChatReadOK {
				row := regexp.MustCompile(`(?s)<tr class="st[^"]*" data-seq="3".*?</tr>`).FindString(body)
				if !strings.Contains(row, "result of read_file arrived") {
					t.Errorf("#3's row does not say when its result arrived:\n%s", row)
				}
			}
		})
	}
	// The chart: a point per call, each what its page says.
	body := mustGet(t, f.in, "/sessions/chat-tools", http.StatusOK)
	var seqs []string
	for _, p := range regexp.MustCompile(`<a class="pt" href="([^"]*)" data-seq="(\d+)" data-tokens="(\d+)"`).FindAllStringSubmatch(body, -1) {
		seqs = append(seqs, p[2])
		page := mustGet(t, f.in, html.UnescapeString(p[1]), http.StatusOK)
		if m := regexp.MustCompile(`<b id="ctx-tokens">(\d+)</b>`).FindStringSubmatch(page); m == nil || m[1] != p[3] {
			t.Errorf("the point of #%s is %s tokens; its page shows %v", p[2], p[3], m)
		}
	}
	if want := []string{"3", "5", "8", "11"}; !slices.Equal(seqs, want) {
		t.Errorf("chart points %v, want a point per call %v", seqs, want)
	}
}
