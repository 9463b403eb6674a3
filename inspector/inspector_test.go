package inspector_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

func o200k(t testing.TB) tokenizer.Counter {
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// listed returns the session IDs a sessions page lists, in order.
func listed(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<a class="id" href="/sessions/[^"]*">([^<]*)</a>`).FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

func TestSessionsListShowsTheTenantsSessionsNewestFirst(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	body := mustGet(t, f.in, "/", http.StatusOK)
	want := []string{"fix-login-retry", "chat-tools", "lit-review", "plan-sprint", "fix-login"}
	if got := listed(body); !slices.Equal(got, want) {
		t.Fatalf("listed %q, want %q", got, want)
	}
	if strings.Contains(body, "acme-secret") {
		t.Error("the default tenant's list shows a session of tenant acme")
	}
	for _, link := range []string{`href="/?user=alice"`, `href="/?agent=coder"`, `href="/facts?user=alice"`} {
		if !strings.Contains(body, link) {
			t.Errorf("the list has no link %s", link)
		}
	}

	for q, want := range map[string][]string{
		"/?user=alice":             {"chat-tools", "plan-sprint", "fix-login"},
		"/?agent=researcher":       {"lit-review"},
		"/?user=alice&agent=coder": {"fix-login"},
		"/?user=nobody":            nil,
	} {
		if got := listed(mustGet(t, f.in, q, http.StatusOK)); !slices.Equal(got, want) {
			t.Errorf("GET %s listed %q, want %q", q, got, want)
		}
	}

	// Tenant acme sees its own session only.
	acme := newFixture(t, inspector.Config{Tenant: func(*http.Request) (string, error) { return "acme", nil }})
	if got := listed(mustGet(t, acme.in, "/", http.StatusOK)); !slices.Equal(got, []string{"acme-secret"}) {
		t.Errorf("tenant acme's list: %q", got)
	}
}

func TestSessionsListPages(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	var all []string
	next := "/?size=1"
	for pages := 0; next != ""; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		body := mustGet(t, f.in, next, http.StatusOK)
		ids := listed(body)
		if len(ids) > 1 {
			t.Fatalf("page %s has %d sessions, want at most 1", next, len(ids))
		}
		all = append(all, ids...)
		next = ""
		if m := regexp.MustCompile(`id="next-page" href="([^"]*)"`).FindStringSubmatch(body); m != nil {
			next = html.UnescapeString(m[1])
			if !strings.Contains(next, "size=1") {
				t.Errorf("the next page link %s drops the page size", next)
			}
		}
	}
	if want := listed(mustGet(t, f.in, "/", http.StatusOK)); !slices.Equal(all, want) {
		t.Errorf("pages of one listed %q, want %q", all, want)
	}
}

// TestSessionsListSkipsOtherTenantsWhenPaging covers the default tenant,
// which the store cannot filter on: many sessions of another tenant
// between the default tenant's must not cut its pages short or hide any.
func TestSessionsListSkipsOtherTenantsWhenPaging(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	ctx := context.Background()
	for i := range 30 {
		if _, err := f.st.Create(ctx, store.CreateRequest{ID: fmt.Sprintf("acme-%02d", i), Tenant: "acme"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.st.Create(ctx, store.CreateRequest{ID: "newest-default"}); err != nil {
		t.Fatal(err)
	}
	var all []string
	next := "/?size=2"
	for pages := 0; next != ""; pages++ {
		if pages > 20 {
			t.Fatal("paging does not end")
		}
		body := mustGet(t, f.in, next, http.StatusOK)
		all = append(all, listed(body)...)
		next = ""
		if m := regexp.MustCompile(`id="next-page" href="([^"]*)"`).FindStringSubmatch(body); m != nil {
			next = html.UnescapeString(m[1])
		}
	}
	want := []string{"newest-default", "fix-login-retry", "chat-tools", "lit-review", "plan-sprint", "fix-login"}
	if !slices.Equal(all, want) {
		t.Errorf("pages listed %q, want %q", all, want)
	}
}

// timelineRow is a row of the session page: a step (kind is its kind),
// a compaction ("compaction") or an amendment of a step on another page
// ("amendment").
type timelineRow struct {
	seq    int64
	kind   string
	tokens int
	class  string // the li's classes
	from   string // data-from: the session an inherited entry comes from
}

func timeline(t *testing.T, body string) []timelineRow {
	t.Helper()
	var out []timelineRow
	re := regexp.MustCompile(`<li class="(entry (?:step|compaction|amendment)[^"]*)" id="e(\d+)" data-seq="\d+" data-kind="([a-z_]+)"(?: data-tokens="(\d+)")?(?: data-from="([^"]*)")?>`)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		seq, _ := strconv.ParseInt(m[2], 10, 64)
		row := timelineRow{seq: seq, kind: m[3], class: m[1], from: html.UnescapeString(m[5])}
		row.tokens, _ = strconv.Atoi(m[4])
		out = append(out, row)
	}
	return out
}

// libStepTokens is what a step costs in the library: the tokens of a
// memory holding the step alone, less the reply priming.
func libStepTokens(t *testing.T, s agentmem.Step, f agentmem.Format, c tokenizer.Counter) int {
	t.Helper()
	// A later step follows s: a final answer that ends a memory costs
	// nothing, and the timeline shows what a step costs when it is sent.
	next := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: s.Info().Number + 1}, Task: "next"}
	tokens := func(steps ...agentmem.Step) int {
		m := agentmem.New(agentmem.Options{Format: f, Counter: c})
		if err := m.Restore(&agentmem.Snapshot{Version: agentmem.SnapshotVersion, Steps: steps}); err != nil {
			t.Fatal(err)
		}
		return m.Tokens()
	}
	return tokens(s, next) - tokens(next)
}

func TestSessionTimeline(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	resp, err := f.st.Read(context.Background(), store.ReadRequest{SessionID: "fix-login"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query     string
		format    agentmem.Format
		tokenizer string
	}{
		{"", agentmem.OpenAI, tokenizer.O200kBase},
		{"?format=anthropic&tokenizer=cl100k_base", render.Anthropic, tokenizer.CL100kBase},
		{"?format=observation&tokenizer=heuristic", render.Observation, tokenizer.Heuristic},
	} {
		body := mustGet(t, f.in, "/sessions/fix-login"+tc.query, http.StatusOK)
		rows := timeline(t, body)
		if len(rows) != len(resp.Entries) {
			t.Fatalf("%s: %d timeline rows, want the log's %d entries", tc.query, len(rows), len(resp.Entries))
		}
		c, _ := tokenizer.Get(tc.tokenizer)
		for i, e := range resp.Entries {
			row := rows[i]
			if row.seq != e.Seq {
				t.Fatalf("%s: row %d is #%d, want #%d", tc.query, i, row.seq, e.Seq)
			}
			if e.Kind == store.CompactionEntry {
				if row.kind != "compaction" {
					t.Errorf("%s: #%d shows as %s, want a compaction marker", tc.query, e.Seq, row.kind)
				}
				continue
			}
			if row.kind != string(e.Step.Kind()) {
				t.Errorf("%s: #%d is %s, want %s", tc.query, e.Seq, row.kind, e.Step.Kind())
			}
			if want := libStepTokens(t, e.Step, tc.format, c); row.tokens != want {
				t.Errorf("%s: #%d shows %d tokens, the library counts %d", tc.query, e.Seq, row.tokens, want)
			}
		}
		// Bars are on the one logarithmic scale of TokenBarFull.
		widths := regexp.MustCompile(`<rect class="fill" width="([0-9.]+)"`).FindAllStringSubmatch(body, -1)
		var steps []timelineRow
		for _, r := range rows {
			if r.kind != "compaction" {
				steps = append(steps, r)
			}
		}
		if len(widths) != len(steps) {
			t.Fatalf("%s: %d token bars for %d steps", tc.query, len(widths), len(steps))
		}
		for i, w := range widths {
			got, _ := strconv.ParseFloat(w[1], 64)
			want := 100 * math.Log10(1+float64(steps[i].tokens)) / math.Log10(1+inspector.TokenBarFull)
			if steps[i].tokens > 0 {
				want = max(want, 0.5)
			}
			if got < want-0.06 || got > want+0.06 {
				t.Errorf("%s: bar of #%d is %.1f%%, want %.1f%%", tc.query, steps[i].seq, got, want)
			}
		}
	}

	body := mustGet(t, f.in, "/sessions/fix-login", http.StatusOK)
	for _, want := range []string{
		"working set of 4 steps · removed 3–5",              // the summary compaction
		"working set of 7 steps · shortened copies of 6, 9", // the observation pruning
		`<code class="tool">read_file</code>`,
		`<span class="covers">covers 3–5</span>`,
		`href="/sessions/fix-login/context?at=9"`,
		`href="/sessions/fix-login/context"`,
		"github.com/example/shop", // metadata
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the session page does not show %q", want)
		}
	}
}

func TestSessionTimelinePages(t *testing.T) {
	f := newFixture(t, inspector.Config{TimelinePage: 5})
	var seqs []int64
	next := "/sessions/fix-login?format=anthropic"
	for pages := 0; next != ""; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		body := mustGet(t, f.in, next, http.StatusOK)
		rows := timeline(t, body)
		if len(rows) > 5 {
			t.Fatalf("%s: %d rows, want at most 5", next, len(rows))
		}
		for _, r := range rows {
			seqs = append(seqs, r.seq)
		}
		next = ""
		if m := regexp.MustCompile(`id="next-page" href="([^"]*)"`).FindStringSubmatch(body); m != nil {
			next = html.UnescapeString(m[1])
			if !strings.Contains(next, "format=anthropic") {
				t.Errorf("the next page %s drops the format", next)
			}
		}
	}
	if len(seqs) != seqAnswer || seqs[0] != 1 || seqs[len(seqs)-1] != seqAnswer || !slices.IsSorted(seqs) {
		t.Errorf("pages showed %v, want 1 to %d in order", seqs, seqAnswer)
	}
	// A step's token bar is the same on every page: the scale does not
	// depend on the other steps a page shows.
	bars := func(body string) map[string]string {
		out := map[string]string{}
		re := regexp.MustCompile(`(?s)<li class="entry step" id="e(\d+)".*?<rect class="fill" width="([0-9.]+)"`)
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			out[m[1]] = m[2]
		}
		return out
	}
	whole := bars(mustGet(t, newFixture(t, inspector.Config{}).in, "/sessions/fix-login?format=anthropic", http.StatusOK)) // one page
	for _, page := range []string{"/sessions/fix-login?format=anthropic", "/sessions/fix-login?format=anthropic&after=5", "/sessions/fix-login?format=anthropic&after=10"} {
		for seq, w := range bars(mustGet(t, f.in, page, http.StatusOK)) {
			if whole[seq] != "" && whole[seq] != w {
				t.Errorf("%s: the bar of #%s is %s%%, on the first page %s%%", page, seq, w, whole[seq])
			}
		}
	}
	if len(whole) < 10 {
		t.Fatalf("bars of %d steps on the first page", len(whole))
	}
}

// statusesOf returns the step statuses of a "what the model saw" page.
func statusesOf(body string) map[int64]string {
	out := map[int64]string{}
	for _, m := range regexp.MustCompile(`<tr class="st st-[a-z]*" data-seq="(\d+)" data-status="([a-z]*)">`).FindAllStringSubmatch(body, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		out[n] = m[2]
	}
	return out
}

// sentMessage is a message of the "what the model saw" page.
type sentMessage struct {
	role   string
	step   string
	tokens int
}

func sentMessages(body string) []sentMessage {
	sent := body[strings.Index(body, `<section class="sent">`):strings.Index(body, `<section class="log">`)]
	var out []sentMessage
	re := regexp.MustCompile(`<div class="mhead"><span class="role">([a-z_]+)</span>.*?(?:<span class="from">step #(\d+)</span>)?<span class="mtok">(\d+) tok</span>`)
	for _, m := range re.FindAllStringSubmatch(sent, -1) {
		n, _ := strconv.Atoi(m[3])
		out = append(out, sentMessage{role: m[1], step: m[2], tokens: n})
	}
	return out
}

func TestWhatTheModelSaw(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	c := o200k(t)
	for _, tc := range []struct {
		name     string
		at       int64
		query    string
		opts     agentmem.ContextOptions
		statuses []string // statuses that must appear
	}{
		{"before the summary", seqSummary, "budget=400", agentmem.ContextOptions{Budget: 400, Counter: c}, []string{inspector.StatusShown, inspector.StatusPruned}},
		{"after the summary, no budget", seqEdit, "", agentmem.ContextOptions{Counter: c}, []string{inspector.StatusShown, inspector.StatusSummarized}},
		{"small budget", seqFinalCheck, "budget=300", agentmem.ContextOptions{Budget: 300, Counter: c},
			[]string{inspector.StatusShown, inspector.StatusTruncated, inspector.StatusSummarized, inspector.StatusPruned}},
		{"truncated to fill", seqFinalCheck, "budget=270&truncate=1", agentmem.ContextOptions{Budget: 270, Counter: c, TruncateToFill: true},
			[]string{inspector.StatusTruncated}},
		{"next call", 0, "budget=8000&tokenizer=o200k_base", agentmem.ContextOptions{Budget: 8000, Counter: c}, []string{inspector.StatusShown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.query
			if tc.at > 0 {
				q = "at=" + strconv.FormatInt(tc.at, 10) + "&" + q
			}
			body := mustGet(t, f.in, "/sessions/fix-login/context?"+q, http.StatusOK)
			lib, ws := libContext(t, f.st, "fix-login", tc.at, tc.opts)

			if m := regexp.MustCompile(`<b id="ctx-tokens">(\d+)</b>`).FindStringSubmatch(body); m == nil || m[1] != strconv.Itoa(lib.Tokens) {
				t.Errorf("context tokens %v, want the library's %d", m, lib.Tokens)
			}
			msgs := sentMessages(body)
			if len(msgs) != len(lib.Messages) {
				t.Fatalf("%d messages shown, the library sends %d", len(msgs), len(lib.Messages))
			}
			sum := 0
			for i, m := range msgs {
				want := lib.Messages[i]
				if m.role != string(want.Role) {
					t.Errorf("message %d: role %s, want %s", i, m.role, want.Role)
				}
				if n := agentmem.MessageTokens(c, want); m.tokens != n {
					t.Errorf("message %d: %d tokens, want %d", i, m.tokens, n)
				}
				if m.step == "" {
					t.Errorf("message %d has no step label", i)
				}
				sum += m.tokens
			}
			if sum+agentmem.ReplyPriming != lib.Tokens {
				t.Errorf("messages cost %d + %d priming, the context %d", sum, agentmem.ReplyPriming, lib.Tokens)
			}
			// Every message's text is on the page.
			text := html.UnescapeString(body)
			for _, m := range lib.Messages {
				for _, p := range m.Content {
					if p.Text != "" && !strings.Contains(text, p.Text) {
						t.Errorf("the page does not show %.60q", p.Text)
					}
				}
				for _, call := range m.ToolCalls {
					if !strings.Contains(body, `<span class="fn">`+call.Name+`</span><span class="callid">`+call.ID+`</span>`) {
						t.Errorf("the page does not show the call %s %s", call.Name, call.ID)
					}
				}
			}
			got := statusesOf(body)
			want := expectedStatuses(t, f.st, "fix-login", tc.at, lib, ws)
			if !maps.Equal(got, want) {
				t.Errorf("statuses %v, want %v", got, want)
			}
			for _, s := range tc.statuses {
				if !slices.Contains(slices.Collect(maps.Values(got)), s) {
					t.Errorf("no step is %s: %v", s, got)
				}
			}
			if tc.opts.TruncateToFill && len(lib.Truncated) == 0 {
				t.Error("the fixture should make the library truncate a step to fill")
			}
			for _, n := range lib.Truncated {
				if !strings.Contains(body, `data-seq="`+strconv.Itoa(n)+`" data-status="truncated"`) {
					t.Errorf("step %d, truncated to fill, is not marked", n)
				}
			}
			if tc.at > 0 && !strings.Contains(body, "The call that produced step <b>#"+strconv.FormatInt(tc.at, 10)+"</b>") {
				t.Error("the page does not say which step the call produced")
			}
		})
	}
}

func TestWhatTheModelSawInAnthropicFormat(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	c, _ := tokenizer.Get(tokenizer.CL100kBase)
	body := mustGet(t, f.in, "/sessions/fix-login/context?format=anthropic&tokenizer=cl100k_base&budget=400", http.StatusOK)
	lib, _ := libContext(t, f.st, "fix-login", 0, agentmem.ContextOptions{Budget: 400, Format: render.Anthropic, Counter: c})
	if !strings.Contains(body, `<b id="ctx-tokens">`+strconv.Itoa(lib.Tokens)+`</b>`) {
		t.Errorf("the page does not show the library's %d tokens", lib.Tokens)
	}
	msgs := sentMessages(body)
	if len(msgs) != len(lib.Messages) {
		t.Fatalf("%d messages shown, the library sends %d", len(msgs), len(lib.Messages))
	}
	for i, m := range msgs {
		if m.role != string(lib.Messages[i].Role) || m.tokens != agentmem.MessageTokens(c, lib.Messages[i]) {
			t.Errorf("message %d: %s %d tokens, want %s %d", i, m.role, m.tokens, lib.Messages[i].Role, agentmem.MessageTokens(c, lib.Messages[i]))
		}
	}
	if text := html.UnescapeString(body); !strings.Contains(text, `"type": "tool_use"`) || !strings.Contains(text, `"type": "tool_result"`) {
		t.Error("the request body does not show Anthropic's tool_use and tool_result blocks")
	}
}

func TestWhatTheModelSawBudgetTooSmall(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	body := mustGet(t, f.in, "/sessions/fix-login/context?budget=10", http.StatusOK)
	m := agentmem.New(agentmem.Options{Counter: o200k(t)})
	resp, err := f.st.Read(context.Background(), store.ReadRequest{SessionID: "fix-login", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Restore(&agentmem.Snapshot{Version: agentmem.SnapshotVersion, Steps: resp.Steps}); err != nil {
		t.Fatal(err)
	}
	_, err = m.Context(context.Background(), agentmem.ContextOptions{Budget: 10})
	var be *agentmem.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("the library accepts budget 10: %v", err)
	}
	if want := fmt.Sprintf("A budget of 10 tokens cannot hold the session's pinned steps (system prompts, first task, summary): they need %d.", be.Required); !strings.Contains(body, want) {
		t.Errorf("the page does not say %q", want)
	}
	if strings.Contains(body, `id="ctx-tokens"`) {
		t.Error("the page shows a context although none fits")
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	for target, status := range map[string]int{
		"/?size=0":                                   http.StatusBadRequest,
		"/?size=abc":                                 http.StatusBadRequest,
		"/?page=not-a-token":                         http.StatusBadRequest,
		"/?user=%ff":                                 http.StatusBadRequest,
		"/sessions/fix-login?format=xml":             http.StatusBadRequest,
		"/sessions/fix-login?after=-1":               http.StatusBadRequest,
		"/sessions/fix-login/context?budget=-5":      http.StatusBadRequest,
		"/sessions/fix-login/context?budget=1e3":     http.StatusBadRequest,
		"/sessions/fix-login/context?tokenizer=gpt2": http.StatusBadRequest,
		"/sessions/fix-login/context?at=0":           http.StatusBadRequest,
		"/sessions/fix-login/context?at=16":          http.StatusBadRequest,
		"/sessions/fix-login/context?truncate=maybe": http.StatusBadRequest,
		"/sessions/fix-login/context?at=15":          http.StatusOK, // the next call
		"/sessions/no-such-session":                  http.StatusNotFound,
		"/sessions/bad%20id":                         http.StatusNotFound,
		"/sessions/no-such-session/context":          http.StatusNotFound,
		"/no/such/page":                              http.StatusNotFound,
		"/recall?k=1000":                             http.StatusBadRequest,
		"/facts?user=" + strings.Repeat("u", 300):    http.StatusBadRequest,
	} {
		resp, body := get(t, f.in, target)
		if resp.StatusCode != status {
			t.Errorf("GET %s: %d, want %d", target, resp.StatusCode, status)
		}
		if status == http.StatusBadRequest && !strings.Contains(body, `<p id="error-message">`) {
			t.Errorf("GET %s: no error message on the page", target)
		}
	}
	_, body := get(t, f.in, "/sessions/fix-login/context?tokenizer=gpt2")
	if !strings.Contains(body, "tokenizer: unknown tokenizer &#34;gpt2&#34;") {
		t.Errorf("the error page does not say what was wrong:\n%s", body)
	}
}

func TestTenancy(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	for _, target := range []string{"/sessions/acme-secret", "/sessions/acme-secret/context", "/sessions/acme-secret/context?at=1"} {
		resp, body := get(t, f.in, target)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "ACME-CONFIDENTIAL") {
			t.Errorf("GET %s as the default tenant: %d, want 404 without the session's content", target, resp.StatusCode)
		}
		// The same page as a session that does not exist.
		_, missing := get(t, f.in, strings.Replace(target, "acme-secret", "no-such-session", 1))
		if body != missing {
			t.Errorf("GET %s differs from a missing session's page", target)
		}
	}

	acme := newFixture(t, inspector.Config{Tenant: func(*http.Request) (string, error) { return "acme", nil }, Facts: newFacts()})
	if body := mustGet(t, acme.in, "/sessions/acme-secret", http.StatusOK); !strings.Contains(body, "ACME-CONFIDENTIAL") {
		t.Error("tenant acme does not see its own session")
	}
	mustGet(t, acme.in, "/sessions/fix-login", http.StatusNotFound)
	mustGet(t, acme.in, "/sessions/fix-login/context?at=3", http.StatusNotFound)
	if body := mustGet(t, acme.in, "/facts?user=alice", http.StatusOK); !strings.Contains(body, "ACME-CONFIDENTIAL fact") || strings.Contains(body, "auth module") {
		t.Error("tenant acme's facts page shows the wrong tenant's facts")
	}

	denied := newFixture(t, inspector.Config{Tenant: func(*http.Request) (string, error) { return "", errors.New("no key: secret detail") }})
	for _, target := range []string{"/", "/sessions/fix-login", "/sessions/fix-login/context", "/facts", "/recall", "/blocks?user=alice"} {
		resp, body := get(t, denied.in, target)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "secret detail") || strings.Contains(body, "fix-login") {
			t.Errorf("GET %s without a tenant: %d, want 401 showing nothing", target, resp.StatusCode)
		}
	}
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	for _, target := range []string{"/", "/sessions/fix-login", "/sessions/fix-login/context?at=3", "/facts", "/recall", "/blocks", "/facts/history?user=a&id=b",
		"/static/style.css", "/static/missing.js", "/nope", "/?size=-1", "/sessions/acme-secret"} {
		resp, _ := get(t, f.in, target)
		if got := resp.Header.Get("Content-Security-Policy"); got != inspector.ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", target, got)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no X-Content-Type-Options: nosniff", target)
		}
	}
	if !strings.Contains(inspector.ContentSecurityPolicy, "default-src 'none'") || strings.Contains(inspector.ContentSecurityPolicy, "unsafe") {
		t.Errorf("the policy is not strict: %s", inspector.ContentSecurityPolicy)
	}
	resp, css := get(t, f.in, "/static/style.css")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") || !strings.Contains(css, ".timeline") {
		t.Errorf("the stylesheet: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Nothing loads from elsewhere, and no page has inline scripts,
	// styles or event handlers.
	for _, target := range []string{"/", "/sessions/fix-login", "/sessions/fix-login/context?at=13&budget=250", "/facts?user=alice", "/recall?q=x",
		"/blocks?user=alice", "/blocks?user=alice&label=human"} {
		body := mustGet(t, newFixture(t, inspector.Config{Facts: newFacts(), Blocks: newBlocks(t, tickClock(t0))}).in, target, http.StatusOK)
		for _, bad := range []string{"<script", "style=", " onload=", " onclick=", "http://", "https://"} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s contains %q", target, bad)
			}
		}
	}
}

func TestEverythingIsEscaped(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	ctx := context.Background()
	evil := `"><script>alert(1)</script><img src=x onerror=alert(2)>`
	m, err := store.CreateMemory(ctx, f.st, store.CreateRequest{ID: "evil", UserID: evil, Agent: evil, Metadata: map[string]string{evil: evil}},
		agentmem.Options{Counter: tokenizer.NewHeuristic()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(ctx, &agentmem.SystemPromptStep{Content: evil}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(ctx, &agentmem.ActionStep{
		ToolCalls: []agentmem.ToolCall{{ID: evil, Name: "x", Arguments: evil}},
		Results:   []agentmem.ToolResult{{CallID: evil, Content: evil}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"/", "/sessions/evil", "/sessions/evil/context", "/sessions/evil/context?format=anthropic", "/facts?user=" + evil, "/recall?q=" + evil} {
		resp, body := get(t, f.in, strings.ReplaceAll(strings.ReplaceAll(target, " ", "%20"), "#", "%23"))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", target, resp.StatusCode)
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, "<img") {
			t.Errorf("GET %s: the page carries the markup unescaped", target)
		}
	}
}

func TestFactsPage(t *testing.T) {
	none := newFixture(t, inspector.Config{})
	if body := mustGet(t, none.in, "/facts?user=alice", http.StatusOK); !strings.Contains(body, `id="not-configured"`) {
		t.Error("without a facts source the page does not say facts are not configured")
	}

	f := newFixture(t, inspector.Config{Facts: newFacts()})
	body := mustGet(t, f.in, "/facts?user=alice", http.StatusOK)
	facts := aliceFacts()
	var active []inspector.FactView
	for _, fv := range facts {
		if !fv.Superseded {
			active = append(active, fv)
		}
	}
	slices.SortFunc(active, func(a, b inspector.FactView) int {
		return compareFloat(fmt.Sprint(b.EffectiveAt(factsNow)), fmt.Sprint(a.EffectiveAt(factsNow)))
	})
	re := regexp.MustCompile(`<tr class="fact" data-current="([0-9.]+)" id="fact-\d+"><td><span class="swatch c\d">\d+</span></td><td class="text">([^<]*)</td>`)
	rows := re.FindAllStringSubmatch(body, -1)
	if len(rows) != len(active) {
		t.Fatalf("%d active facts shown, want %d", len(rows), len(active))
	}
	for i, row := range rows {
		want := active[i]
		if html.UnescapeString(row[2]) != want.Text {
			t.Errorf("fact %d: %q, want %q (by current confidence)", i, row[2], want.Text)
		}
		if cur := strconv.FormatFloat(want.EffectiveAt(factsNow), 'f', 2, 64); row[1] != cur {
			t.Errorf("fact %q: current confidence %s, want %s", want.Text, row[1], cur)
		}
	}
	// The superseded fact says when, and links to the row of the fact
	// that replaced it.
	n := slices.IndexFunc(active, func(f inspector.FactView) bool { return f.ID == "f-go-rust" }) + 1
	if want := fmt.Sprintf(`<s>Prefers Go for backend services</s> <span class="muted supersession">superseded <span class="time">2026-03-14 12:00:00Z</span> by <a href="#fact-%d">#%[1]d “Prefers Go and Rust for backend services”</a></span>`, n); !strings.Contains(body, want) {
		t.Errorf("the superseded fact is not shown as superseded by #%d", n)
	}
	if !strings.Contains(body, fmt.Sprintf(`<tr class="fact" data-current="%s" id="fact-%d"><td><span class="swatch c%d">%[2]d</span></td><td class="text">Prefers Go and Rust for backend services</td>`, rows[n-1][1], n, (n-1)%8)) {
		t.Errorf("row #%d is not the fact that superseded the old one", n)
	}
	// Each fact says when it held, or that the source does not know.
	valid := map[string]string{}
	for _, m := range regexp.MustCompile(`<td class="text">(?:<s>)?([^<]*).*?</td><td class="time valid">(.*?)</td>`).FindAllStringSubmatch(body, -1) {
		valid[html.UnescapeString(m[1])] = m[2]
	}
	for text, want := range map[string]string{
		"Works on the shop's auth module":          `<span class="muted">unknown</span>`,
		"Uses PostgreSQL 17 in production":         "since 2025-11-25 12:00:00Z",
		"Is on call the week of March 23":          "2026-03-23 00:00:00Z – 2026-03-30 00:00:00Z",
		"Prefers Go for backend services":          "2026-02-28 12:00:00Z – 2026-03-14 12:00:00Z",
		"Prefers Go and Rust for backend services": "since 2026-03-14 12:00:00Z",
	} {
		if valid[text] != want {
			t.Errorf("fact %q: valid %q, want %q", text, valid[text], want)
		}
	}
	if strings.Contains(body, `class="aside history"`) {
		t.Error("facts link to a history their source does not keep")
	}
	// The overview chart draws each active fact, decaying: its line ends
	// lower than the point at now.
	if n := strings.Count(body, `<g class="line c`); n != len(active)*2 { // overview + sparkline
		t.Errorf("%d chart lines for %d active facts", n, len(active))
	}
	if strings.Count(body, `<path class="past"`) != 2*len(facts)-1 {
		t.Errorf("%d past lines, want one per fact on the overview and one per sparkline", strings.Count(body, `<path class="past"`))
	}
	// Each fact says how many times it was seen again, superseded ones
	// too.
	seen := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)<tr class="fact[^"]*" data-current="[0-9.]+" id="fact-\d+">.*?<td class="text">(?:<s>)?([^<]*).*?<td class="num seen">(\d+)</td>`).FindAllStringSubmatch(body, -1) {
		seen[html.UnescapeString(m[1])] = m[2]
	}
	for _, fv := range facts {
		if got, want := seen[fv.Text], strconv.Itoa(fv.Reinforcements); got != want {
			t.Errorf("fact %q: seen again %q times, want %s", fv.Text, got, want)
		}
	}
	if body := mustGet(t, f.in, "/facts?user=nobody", http.StatusOK); !strings.Contains(body, "No facts about this user.") {
		t.Error("a user without facts is not said to have none")
	}
}

func TestRecallPage(t *testing.T) {
	none := newFixture(t, inspector.Config{})
	if body := mustGet(t, none.in, "/recall?q=bcrypt", http.StatusOK); !strings.Contains(body, `id="not-configured"`) {
		t.Error("without a recall source the page does not say recall is not configured")
	}
	f := newFixture(t, inspector.Config{})
	src := newRecall(t, f.st, "fix-login", "plan-sprint", "lit-review", "acme/acme-secret")
	in, err := inspector.New(inspector.Config{Store: f.st, Recall: src})
	if err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, in, "/recall?q=bcrypt+password&k=3", http.StatusOK)
	want, _ := src.Search(context.Background(), "", "bcrypt password", "", 3)
	re := regexp.MustCompile(`<li class="hit"><div class="hhead"><span class="rank">(\d+)</span><span class="score">score ([0-9.]+)</span><a href="([^"]*)">`)
	hits := re.FindAllStringSubmatch(body, -1)
	if len(hits) != len(want) || len(want) != 3 {
		t.Fatalf("%d hits shown, want the source's %d (3)", len(hits), len(want))
	}
	for i, h := range hits {
		if h[2] != strconv.FormatFloat(want[i].Score, 'f', 3, 64) || h[3] != fmt.Sprintf("/sessions/%s/context?at=%d", want[i].SessionID, want[i].Seq) {
			t.Errorf("hit %d: score %s link %s, want %v", i, h[2], h[3], want[i])
		}
	}
	if body := mustGet(t, in, "/recall?q=ACME-CONFIDENTIAL", http.StatusOK); strings.Contains(body, `class="hit"`) {
		t.Error("recall shows another tenant's entry")
	}
	// The words that match the query are marked, as recall analyzes them.
	if !regexp.MustCompile(`(?i)<mark>bcrypt</mark>`).MatchString(body) || strings.Contains(body, "<mark>the</mark>") {
		t.Errorf("the hits' matching words are not marked:\n%s", body)
	}
	// The scope field narrows the search, and is kept in the form.
	scoped := mustGet(t, in, "/recall?q=bcrypt+password&k=10&scope=session:plan-sprint", http.StatusOK)
	if !strings.Contains(scoped, `name="scope" value="session:plan-sprint"`) {
		t.Error("the scope is not kept in the form")
	}
	for _, h := range re.FindAllStringSubmatch(scoped, -1) {
		if !strings.HasPrefix(h[3], "/sessions/plan-sprint/") {
			t.Errorf("scope session:plan-sprint shows a hit of %s", h[3])
		}
	}
	if scopedUser := mustGet(t, in, "/recall?q=password&scope=user:alice", http.StatusOK); strings.Contains(scopedUser, "/sessions/lit-review/") {
		t.Error("scope user:alice shows bob's session")
	}
	mustGet(t, in, "/recall?q=x&scope=planet:earth", http.StatusBadRequest)
}

func TestNewChecksConfig(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	for _, cfg := range []inspector.Config{
		{},
		{Store: f.st, DefaultTokenizer: "gpt2"},
		{Store: f.st, DefaultBudget: -1},
		{Store: f.st, MaxContextTokens: -1},
		{Store: f.st, MaxContextTokens: inspector.MaxBudget + 1},
		{Store: f.st, MaxContextTokens: 100, DefaultBudget: 101},
		{Store: f.st, PageSize: 5000},
		{Store: f.st, TimelinePage: -1},
	} {
		if _, err := inspector.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
	in, err := inspector.New(inspector.Config{Store: f.st, DefaultTokenizer: tokenizer.Heuristic, DefaultBudget: 300})
	if err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, in, "/sessions/fix-login/context", http.StatusOK)
	if !strings.Contains(body, `<b id="ctx-budget">300</b>`) || !strings.Contains(body, "· openai · heuristic") {
		t.Error("the defaults of the config are not used")
	}
}

// TestMountedByPatterns mounts the inspector under its Patterns in a mux
// that has routes of its own: its pages work, and other paths stay the
// mux's.
func TestMountedByPatterns(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sessions/{id}", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("api")) })
	for _, p := range inspector.Patterns {
		mux.Handle(p, f.in)
	}
	for _, target := range []string{"/", "/sessions/fix-login", "/sessions/fix-login/context?at=3", "/facts", "/facts/history?user=alice&id=f-go", "/recall", "/blocks", "/static/style.css"} {
		resp, body := get(t, mux, target)
		_, direct := get(t, f.in, target)
		if resp.StatusCode != http.StatusOK || body != direct {
			t.Errorf("GET %s through the patterns: %d, and not the inspector's page", target, resp.StatusCode)
		}
	}
	if _, body := get(t, mux, "/v1/sessions/x"); body != "api" {
		t.Error("the mux's own route is shadowed")
	}
	if resp, body := get(t, mux, "/v1/nope"); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "inspector") {
		t.Error("an unknown path goes to the inspector rather than the mux's 404")
	}
}

// TestWhatTheModelSawPendingCalls: an assistant message whose tool calls
// await results (appended item by item) is not sent, and says so; once
// its results are appended, the call as it was made is shown with them.
func TestWhatTheModelSawPendingCalls(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	ctx := context.Background()
	if _, err := f.st.Create(ctx, store.CreateRequest{ID: "items"}); err != nil {
		t.Fatal(err)
	}
	add := func(msgs ...agentmem.Message) {
		t.Helper()
		if _, err := newStoreService(t, f.st).AppendMessages(ctx, sessions.MessagesRequest{SessionID: "items", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	add(agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("sys")}, agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("look")})
	add(agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text("calling grep"), ToolCalls: []agentmem.ToolCall{{ID: "g1", Name: "grep", Arguments: "{}"}}})
	row := regexp.MustCompile(`data-seq="3" data-status="([a-z]+)">.*?<span class="why">([^<]*)</span>`)
	body := mustGet(t, f.in, "/sessions/items/context", http.StatusOK)
	if m := row.FindStringSubmatch(body); m == nil || m[1] != inspector.StatusPending || !strings.Contains(m[2], "g1") {
		t.Fatalf("the pending step's row: %q", m)
	}
	if n := len(sentMessages(body)); n != 2 {
		t.Fatalf("%d messages sent, want the system prompt and the task (the pending call is not sent)", n)
	}
	add(agentmem.Message{Role: agentmem.RoleTool, ToolCallID: "g1", Content: agentmem.Text("found it")})
	body = mustGet(t, f.in, "/sessions/items/context", http.StatusOK)
	if m := row.FindStringSubmatch(body); m == nil || m[1] != inspector.StatusShown || !strings.Contains(m[2], "arrived after it") {
		t.Fatalf("the completed step's row: %q", m)
	}
	if n := len(sentMessages(body)); n != 4 {
		t.Fatalf("%d messages sent after the result, want 4", n)
	}
	// The completion is an amendment of step 3, shown in its row on both
	// pages, not as a compaction.
	if !strings.Contains(body, `<span class="arrived">result of grep arrived &#43;`) || strings.Contains(body, `<tr class="compaction"`) {
		t.Fatalf("the context page does not show the amendment in #3's row:\n%s", body)
	}
	if page := mustGet(t, f.in, "/sessions/items", http.StatusOK); !strings.Contains(page, `<span class="arrived" id="e4" data-seq="4">result of grep arrived &#43;`) || strings.Contains(page, "entry compaction") {
		t.Fatalf("the session page does not show the amendment in #3's row:\n%s", page)
	}
	// At the call after the assistant message, it was still pending.
	body = mustGet(t, f.in, "/sessions/items/context?at=4", http.StatusOK)
	if m := row.FindStringSubmatch(body); m == nil || m[1] != inspector.StatusPending {
		t.Fatalf("the row as of seq 4: %q", m)
	}
	// A result popped (sessions.Service.Pop) is an amendment too: the row says the
	// result was withdrawn, and the call awaits its result again.
	if _, err := newStoreService(t, f.st).Pop(ctx, sessions.PopRequest{SessionID: "items"}); err != nil {
		t.Fatal(err)
	}
	page := mustGet(t, f.in, "/sessions/items", http.StatusOK)
	if !strings.Contains(page, `<span class="arrived" id="e5" data-seq="5">result of grep withdrawn &#43;`) || !strings.Contains(page, "awaiting its result") || strings.Contains(page, "entry compaction") {
		t.Fatalf("the session page after the pop:\n%s", page)
	}
}

// TestStoreFailurePages: a store that is unavailable (closed here, as in a
// shutdown) is a 503 page with Retry-After; a failure nobody expected is a
// 500 page that does not show it.
func TestStoreFailurePages(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	f.st.Close()
	resp, body := get(t, f.in, "/")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, "unavailable") {
		t.Errorf("closed store: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}

	broken, err := inspector.New(inspector.Config{Store: store.New(brokenStore{f.st})})
	if err != nil {
		t.Fatal(err)
	}
	resp, body = get(t, broken, "/")
	if resp.StatusCode != http.StatusInternalServerError || resp.Header.Get("Retry-After") != "" || strings.Contains(body, "does not decode") {
		t.Errorf("broken store: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
}

// brokenStore fails List with an error nobody expected.
type brokenStore struct{ store.Driver }

func (brokenStore) List(context.Context, store.ListRequest) (*store.ListResponse, error) {
	return nil, errors.New("stored session does not decode")
}

// The session page charts what each model call was sent: a point per
// call (each action and answer), whose tokens are what that call's page
// shows, under the page's budget, format and tokenizer, with the budget
// drawn.
func TestContextSizeChart(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	point := regexp.MustCompile(`<a class="pt( blind)?" href="([^"]*)" data-seq="(\d+)" data-tokens="(\d+)"`)
	for _, query := range []string{"?budget=250", "?budget=120&format=anthropic&tokenizer=cl100k_base", "", "?budget=20"} {
		body := mustGet(t, f.in, "/sessions/fix-login"+query, http.StatusOK)
		pts := point.FindAllStringSubmatch(body, -1)
		var seqs []string
		for _, p := range pts {
			seqs = append(seqs, p[3])
		}
		if want := []string{"3", "4", "5", "6", "9", "10", "13", "14"}; !slices.Equal(seqs, want) {
			t.Fatalf("%s: chart points at %v, want a point per call %v", query, seqs, want)
		}
		for _, p := range pts {
			page := mustGet(t, f.in, html.UnescapeString(p[2]), http.StatusOK)
			switch m := regexp.MustCompile(`<b id="ctx-tokens">(\d+)</b>`).FindStringSubmatch(page); {
			case p[1] == " blind":
				if !strings.Contains(page, `id="budget-error"`) {
					t.Errorf("%s: the point of #%s says nothing was sent; its page does not", query, p[3])
				}
			case m == nil || m[1] != p[4]:
				t.Errorf("%s: the point of #%s is %s tokens; its page shows %v", query, p[3], p[4], m)
			}
		}
		hasBudget := strings.Contains(query, "budget")
		if strings.Contains(body, `id="budget-line"`) != hasBudget {
			t.Errorf("%s: budget line drawn: %v", query, !hasBudget)
		}
	}
	// A budget below the pinned steps: every call is blind, and said so.
	if body := mustGet(t, f.in, "/sessions/fix-login?budget=20", http.StatusOK); !strings.Contains(body, `At <b>8</b> calls (red) nothing could be sent`) {
		t.Error("the chart does not say the calls were sent nothing")
	}
	// A tenant's session is charted from its own log: the same session in
	// tenant acme, alone in its store, gives the same points.
	acmeStore := memstore.New(memstore.Options{Clock: tickClock(t0)})
	defer acmeStore.Close()
	seedLogin(t, acmeStore, "acme", "fix-login", tickClock(t0))
	acme, err := inspector.New(inspector.Config{Store: acmeStore, Tenant: func(*http.Request) (string, error) { return "acme", nil }})
	if err != nil {
		t.Fatal(err)
	}
	own := point.FindAllStringSubmatch(mustGet(t, f.in, "/sessions/fix-login?budget=250", http.StatusOK), -1)
	theirs := point.FindAllStringSubmatch(mustGet(t, acme, "/sessions/fix-login?budget=250", http.StatusOK), -1)
	if len(theirs) != len(own) || len(own) == 0 {
		t.Fatalf("tenant acme's chart has %d points, the default tenant's %d", len(theirs), len(own))
	}
	for i := range own {
		if own[i][3] != theirs[i][3] || own[i][4] != theirs[i][4] {
			t.Errorf("point %d: acme %s=%s, default %s=%s", i, theirs[i][3], theirs[i][4], own[i][3], own[i][4])
		}
	}
	// The chart is on the first page of the timeline only.
	if body := mustGet(t, f.in, "/sessions/fix-login?after=3", http.StatusOK); strings.Contains(body, `id="context-chart"`) {
		t.Error("a later page of the timeline draws the chart again")
	}
}

// A log too long for the chart gets a note instead; one with many calls
// is drawn with a sample of them.
func TestContextSizeChartBounds(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	in, err := inspector.New(inspector.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	fill := func(id string, n int) {
		if _, err := st.Create(ctx, store.CreateRequest{ID: id}); err != nil {
			t.Fatal(err)
		}
		steps := []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: id + "-task"}, Task: "count"}}
		for i := range n - 1 {
			steps = append(steps, &agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: fmt.Sprintf("%s-%d", id, i)}, ModelOutput: fmt.Sprintf("step %d", i)})
		}
		for len(steps) > 0 {
			k := min(len(steps), 1000)
			if _, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: steps[:k]}); err != nil {
				t.Fatal(err)
			}
			steps = steps[k:]
		}
	}
	fill("many", 3*inspector.MaxChartCalls)
	body := mustGet(t, in, "/sessions/many?budget=500", http.StatusOK)
	if n := strings.Count(body, `<a class="pt"`); n != inspector.MaxChartCalls || !strings.Contains(body, fmt.Sprintf("%d of the calls are drawn", inspector.MaxChartCalls)) {
		t.Errorf("%d points drawn of %d calls, want %d and a caption that says so", n, 3*inspector.MaxChartCalls-1, inspector.MaxChartCalls)
	}
	if !strings.Contains(body, fmt.Sprintf(`data-seq="%d"`, 3*inspector.MaxChartCalls)) {
		t.Error("the newest call is not drawn")
	}
	fill("long", inspector.MaxChartEntries+1)
	body = mustGet(t, in, "/sessions/long", http.StatusOK)
	if strings.Contains(body, `id="context-chart"`) || !strings.Contains(body, `id="context-sizes-note"`) {
		t.Error("a log over MaxChartEntries is charted, or not said to be too long")
	}
}

// TestContextExplainsTheTruncatedNewestStep: when the newest step alone is
// larger than what the budget leaves, the page says it was sent cut to
// fit rather than left out (issue 13 item 5).
func TestContextExplainsTheTruncatedNewestStep(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	ctx := context.Background()
	m, err := store.CreateMemory(ctx, f.st, store.CreateRequest{ID: "big-log"}, agentmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []agentmem.Step{
		&agentmem.SystemPromptStep{Content: "You debug services."},
		&agentmem.TaskStep{Task: "Why does checkout fail?"},
		&agentmem.ActionStep{ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "read_logs", Arguments: `{}`}},
			Results: []agentmem.ToolResult{{CallID: "c1", Content: strings.Repeat("checkout: payment timeout after 30s\n", 800)}}},
	} {
		if _, err := m.Add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	body := html.UnescapeString(mustGet(t, f.in, "/sessions/big-log/context?budget=400", http.StatusOK))
	if !strings.Contains(body, `data-seq="3" data-status="truncated"`) {
		t.Fatal("the newest step is not marked truncated")
	}
	if !strings.Contains(body, "the newest step alone was larger than what the budget left") {
		t.Fatal("the page does not explain why the newest step was cut")
	}
	if !strings.Contains(body, "checkout: payment timeout") {
		t.Fatal("the page does not show what the model was sent of the newest step")
	}
}
