package inspector_test

import (
	"context"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/store/sqlite"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/chromedp/chromedp"
)

// UpdateScreenshotsEnv names the variable that makes TestBrowser write its
// screenshots to docs/img, for the documentation, instead of a temporary
// directory.
const UpdateScreenshotsEnv = "AGENTMEM_UPDATE_SCREENSHOTS"

// TestBrowser drives the inspector in headless Chromium over a SQLite
// store: the sessions list, a session's timeline, what the model saw at a
// step under a small budget, a session's memory blocks and a block's
// versions, the facts page and a fact's history, and recall, checking
// what each page shows through DOM queries and taking a screenshot of
// each.
func TestBrowser(t *testing.T) {
	chrome := testenv.ChromiumPath(t)
	shots := t.TempDir()
	if os.Getenv(UpdateScreenshotsEnv) == "1" {
		shots = filepath.Join("..", "docs", "img")
	}

	ctx := context.Background()
	clk := tickClock(t0)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentmem.db"), sqlite.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seedLogin(t, st, "", "fix-login", clk)
	seedOthers(t, st, clk)
	in, err := inspector.New(inspector.Config{
		Store:  st,
		Facts:  newHistoryFacts(),
		Recall: newRecall(t, st, "fix-login", "plan-sprint", "lit-review", "acme/acme-secret"),
		Blocks: newBlocks(t, tickClock(t0)),
		Clock:  func() time.Time { return factsNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(in)
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1440, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	defer cancel()

	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	strs := func(js string) []string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](js))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return v
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The sessions list: the default tenant's sessions, not acme's.
	do("open the sessions list", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#sessions")))
	ids := strs(`[...document.querySelectorAll('#sessions tr.session a.id')].map(a => a.textContent)`)
	slices.Sort(ids)
	if want := []string{"chat-tools", "fix-login", "fix-login-retry", "lit-review", "plan-sprint"}; !slices.Equal(ids, want) {
		t.Fatalf("sessions listed: %q, want %q", ids, want)
	}
	shot("sessions.png")

	// Filter by user with the form.
	do("filter by user bob",
		chromedp.SetValue(chromedp.CSS(`input[name=user]`), "bob"),
		chromedp.Submit(chromedp.CSS(`form.controls`)),
		chromedp.WaitVisible(chromedp.CSS(`a.id[href="/sessions/lit-review"]`)))
	if ids := strs(`[...document.querySelectorAll('#sessions tr.session a.id')].map(a => a.textContent)`); !slices.Equal(ids, []string{"lit-review"}) {
		t.Fatalf("sessions of bob: %q, want [lit-review]", ids)
	}

	// A session's timeline, reached by clicking through from alice's list.
	do("open fix-login",
		chromedp.Navigate(srv.URL+"/?user=alice"),
		chromedp.Click(chromedp.CSS(`a.id[href="/sessions/fix-login"]`)),
		chromedp.WaitVisible(chromedp.CSS("#timeline")))
	kinds := strs(`[...document.querySelectorAll('#timeline > li')].map(li => li.dataset.kind || 'compaction')`)
	wantKinds := []string{"system_prompt", "task", "action", "action", "action", "action", "summary", "compaction",
		"action", "action", "scratchpad", "compaction", "action", "final_answer"}
	if !slices.Equal(kinds, wantKinds) {
		t.Fatalf("timeline kinds: %q, want %q", kinds, wantKinds)
	}
	// The token bars are on one scale: the longest step (the test file
	// read at #3) has the widest bar, and its width is the same on a page
	// of the timeline that starts after it.
	widths := strs(`[...document.querySelectorAll('#timeline li.step rect.fill')].map(r => r.getAttribute('width'))`)
	for i, w := range widths {
		if compareFloat(w, widths[seqReadTest-1]) > 0 {
			t.Errorf("bar widths %q: step #%d is wider than #%d, the longest", widths, i+1, seqReadTest)
		}
	}
	// The chart of what each call was sent: a point per call, each
	// leading to that call's page.
	points := strs(`[...document.querySelectorAll('#context-chart a.pt')].map(a => a.dataset.seq + '=' + a.dataset.tokens)`)
	if want := []string{"3", "4", "5", "6", "9", "10", "13", "14"}; len(points) != len(want) {
		t.Errorf("context chart points %q, want one per call %q", points, want)
	}
	box := strs(`(() => { const r = document.querySelector('#context-chart').getBoundingClientRect(); return [String(r.width), String(r.height)] })()`)
	if compareFloat(box[0], "400") < 0 || compareFloat(box[1], "80") < 0 {
		t.Errorf("the context chart is drawn %sx%s px", box[0], box[1])
	}
	do("open step 3", chromedp.Click(chromedp.CSS(`#e3 summary`)), chromedp.WaitVisible(chromedp.CSS(`#e3 ol.messages`)))
	if got := text(`#e3 .call .fn`); got != "read_file" {
		t.Errorf("step #3's tool call: %q, want read_file", got)
	}
	shot("session.png")

	// A chat whose tool results arrived in requests of their own: their
	// amendments are in the rows of the calls they completed, which say
	// when each result arrived; the one real compaction keeps its row.
	do("open chat-tools", chromedp.Navigate(srv.URL+"/sessions/chat-tools"), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	kinds = strs(`[...document.querySelectorAll('#timeline > li')].map(li => li.dataset.kind)`)
	if want := []string{"system_prompt", "task", "action", "action", "compaction", "action", "action"}; !slices.Equal(kinds, want) {
		t.Fatalf("chat-tools timeline kinds: %q, want %q", kinds, want)
	}
	for seq, want := range map[int][]string{
		seqChatRead: {"result of read_file arrived"},
		seqChatGrep: {"result of grep arrived"},
		seqChatBoth: {"result of run_tests arrived", "result of lint arrived"},
	} {
		got := strs(`[...document.querySelectorAll('#e` + strconv.Itoa(seq) + ` summary .arrived')].filter(e => e.getBoundingClientRect().width > 0).map(e => e.textContent)`)
		if len(got) != len(want) {
			t.Errorf("#%d shows arrivals %q, want %q", seq, got, want)
			continue
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]+" +") {
				t.Errorf("#%d shows %q, want %q and when", seq, got[i], want[i])
			}
		}
	}
	// A link to an amendment's entry lands on the row of its step.
	if got := strs(`[document.getElementById('e` + strconv.Itoa(seqChatReadOK) + `').closest('li.entry').id]`); !slices.Equal(got, []string{"e" + strconv.Itoa(seqChatRead)}) {
		t.Errorf("#e%d is in the row %q, want e%d's", seqChatReadOK, got, seqChatRead)
	}
	do("open step 3 of chat-tools", chromedp.Click(chromedp.CSS(`#e3 summary`)), chromedp.WaitVisible(chromedp.CSS(`#e3 ol.messages`)))
	if roles := strs(`[...document.querySelectorAll('#e3 li.msg .role')].map(e => e.textContent)`); !slices.Equal(roles, []string{"assistant", "tool"}) {
		t.Errorf("#3's messages: %q, want the call and its result", roles)
	}
	shot("session-tools.png")
	do("back to fix-login", chromedp.Navigate(srv.URL+"/sessions/fix-login"), chromedp.WaitVisible(chromedp.CSS("#timeline")))

	// What the model saw at step 13 under a small budget: the steps the
	// pinned summary covers show as summarized, the newest step, cut to
	// fit, as truncated, the steps that do not fit as pruned.
	const budget = 300
	do("open what the model saw at step 13",
		chromedp.Click(chromedp.CSS(`#e13 a.saw`)),
		chromedp.WaitVisible(chromedp.CSS("#steps")),
		chromedp.SetValue(chromedp.CSS(`input[name=budget]`), strconv.Itoa(budget)),
		chromedp.Submit(chromedp.CSS(`form.controls`)),
		chromedp.WaitVisible(chromedp.CSS("#ctx-budget")))
	loc, err := chromedp.Run(bctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.URL + "/sessions/fix-login/context?at=13&format=openai&tokenizer=o200k_base&budget=" + strconv.Itoa(budget); loc != want {
		t.Errorf("the form led to %s, want the shareable %s", loc, want)
	}
	counter, _ := tokenizer.Get(tokenizer.O200kBase)
	lib, ws := libContext(t, st, "fix-login", seqFinalCheck, agentmem.ContextOptions{Budget: budget, Counter: counter})
	if got := text("#ctx-tokens"); got != strconv.Itoa(lib.Tokens) {
		t.Errorf("context tokens %s, want the library's %d", got, lib.Tokens)
	}
	status := map[int64]string{}
	for _, kv := range strs(`[...document.querySelectorAll('#steps tr.st')].map(tr => tr.dataset.seq + '=' + tr.dataset.status)`) {
		k, v, _ := strings.Cut(kv, "=")
		n, _ := strconv.ParseInt(k, 10, 64)
		status[n] = v
	}
	if want := expectedStatuses(t, st, "fix-login", seqFinalCheck, lib, ws); !maps.Equal(status, want) {
		t.Errorf("step statuses %v, want %v", status, want)
	}
	for _, s := range []string{inspector.StatusShown, inspector.StatusTruncated, inspector.StatusSummarized, inspector.StatusPruned} {
		if !slices.Contains(slices.Collect(maps.Values(status)), s) {
			t.Errorf("no step is %s under budget %d: %v; the fixture should show every status", s, budget, status)
		}
	}
	roles := strs(`[...document.querySelectorAll('section.sent li.msg .role')].map(e => e.textContent)`)
	if len(roles) < 3 || roles[0] != "system" || roles[1] != "user" {
		t.Errorf("messages sent: roles %q, want the system prompt and the task first", roles)
	}
	shot("context.png")

	// The chart under the same budget: a dashed budget line, and the point
	// of step 13 says what that call's page says.
	do("open the timeline under the budget",
		chromedp.Navigate(srv.URL+"/sessions/fix-login?budget="+strconv.Itoa(budget)),
		chromedp.WaitVisible(chromedp.CSS("#budget-line")))
	if got := strs(`[...document.querySelectorAll('#context-chart a.pt[data-seq="13"]')].map(a => a.dataset.tokens)`); len(got) != 1 || got[0] != strconv.Itoa(lib.Tokens) {
		t.Errorf("the chart's point for step 13 is %q tokens, want the library's %d", got, lib.Tokens)
	}
	shot("session-chart.png")
	do("click the point of step 13",
		chromedp.Click(chromedp.CSS(`#context-chart a.pt[data-seq="13"] circle`)),
		chromedp.WaitVisible(chromedp.CSS("#ctx-tokens")))
	if got := text("#ctx-tokens"); got != strconv.Itoa(lib.Tokens) {
		t.Errorf("the point led to a page of %s tokens, want %d", got, lib.Tokens)
	}

	// A branch, from its parent's list of branches: the entries it
	// inherited are marked as such and muted, with the fork point drawn
	// after the last of them.
	do("open fix-login's branch from its page",
		chromedp.Navigate(srv.URL+"/sessions/fix-login"),
		chromedp.WaitVisible(chromedp.CSS("#branches")),
		chromedp.Click(chromedp.CSS(`#branches a.id[href="/sessions/fix-login-retry"]`)),
		chromedp.WaitVisible(chromedp.CSS("#fork")))
	if got := text(`#session-id`); got != "fix-login-retry" {
		t.Fatalf("the branches list led to %q", got)
	}
	rows := strs(`[...document.querySelectorAll('#timeline > li')].map(li => li.id + ':' + (li.dataset.from || '') + ':' + (li.classList.contains('inherited') ? 'inherited' : ''))`)
	var want []string
	for _, seq := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10} {
		want = append(want, "e"+strconv.Itoa(seq)+":fix-login:inherited")
	}
	want = append(want, "fork::", "e"+strconv.Itoa(seqRetryRun)+"::", "e"+strconv.Itoa(seqRetryAnswer)+"::")
	if !slices.Equal(rows, want) {
		t.Errorf("the branch's rows %q, want %q", rows, want)
	}
	// Inherited rows look muted beside the branch's own.
	opacity := strs(`[document.querySelector('#e3 .row'), document.querySelector('#e11 .row')].map(r => getComputedStyle(r).opacity)`)
	if compareFloat(opacity[0], opacity[1]) >= 0 {
		t.Errorf("an inherited row's opacity %s, the branch's own %s", opacity[0], opacity[1])
	}
	if got := text(`#fork`); !strings.Contains(got, "inherited from fix-login") {
		t.Errorf("the fork point says %q", got)
	}
	shot("branch.png")

	// The memory blocks fix-login's contexts show: alice's, then its
	// own, alice's task hidden by the session's; and a block's versions,
	// each with what it changed.
	do("open fix-login's blocks", chromedp.Navigate(srv.URL+"/sessions/fix-login"), chromedp.WaitVisible(chromedp.CSS("#blocks")))
	blockRows := strs(`[...document.querySelectorAll('#blocks .blockgroup')].flatMap(g => [...g.querySelectorAll('tr.block')].map(tr => g.dataset.owner + ':' + tr.dataset.label + ':' + tr.className))`)
	if want := []string{"user:human:block", "user:task:block hidden", "session:task:block read-only"}; !slices.Equal(blockRows, want) {
		t.Errorf("blocks listed: %q, want %q", blockRows, want)
	}
	if got := strs(`[getComputedStyle(document.querySelector('#blocks tr.hidden td.value pre')).textDecorationLine]`); !strings.Contains(got[0], "line-through") {
		t.Errorf("the hidden block's value is drawn %q, not struck through", got)
	}
	do("open the versions of alice's human block",
		chromedp.Click(chromedp.CSS(`#blocks tr.block[data-label="human"] td.label a`)),
		chromedp.WaitVisible(chromedp.CSS("#versions")))
	if got := strs(`[...document.querySelectorAll('#versions li.version')].map(li => li.dataset.version + ':' + li.dataset.action)`); !slices.Equal(got, []string{"3:replaced", "2:appended", "1:created"}) {
		t.Errorf("versions: %q", got)
	}
	if del, ins := text(`#v3 pre.diff del`), text(`#v3 pre.diff ins`); del != "tea" || ins != "coffee" {
		t.Errorf("version 3 deleted %q and inserted %q, want tea and coffee", del, ins)
	}
	if got := strs(`['del', 'ins'].map(t => getComputedStyle(document.querySelector('#v3 pre.diff ' + t)).backgroundColor)`); got[0] == got[1] {
		t.Errorf("deleted and inserted text look alike: %q", got)
	}
	do("open the value before and after version 3",
		chromedp.Click(chromedp.CSS(`#v3 details.beforeafter summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#v3 pre.before`)))
	if got := text(`#v3 pre.before`); got != "Name: Alice.\nLikes tea." {
		t.Errorf("the value before version 3: %q", got)
	}
	shot("block.png")

	// Alice's facts, from the session's header.
	do("open alice's facts",
		chromedp.Navigate(srv.URL+"/sessions/fix-login"),
		chromedp.Click(chromedp.CSS(`.sesshead a.aside`)),
		chromedp.WaitVisible(chromedp.CSS("#facts")))
	facts := strs(`[...document.querySelectorAll('#facts tr.fact:not(.superseded) td.text')].map(e => e.textContent)`)
	if len(facts) != 4 {
		t.Fatalf("active facts shown: %q, want 4", facts)
	}
	current := strs(`[...document.querySelectorAll('#facts tr.fact:not(.superseded)')].map(e => e.dataset.current)`)
	if !slices.IsSortedFunc(current, func(a, b string) int { return -compareFloat(a, b) }) {
		t.Errorf("facts not by current confidence, highest first: %q", current)
	}
	if n := strs(`[...document.querySelectorAll('figure.overview svg g.line path.past')].map(p => p.getAttribute('d'))`); len(n) != 4 {
		t.Errorf("overview chart lines: %d, want 4", len(n))
	}
	if got := text(`#facts tr.superseded td.text s`); got != "Prefers Go for backend services" {
		t.Errorf("superseded fact: %q", got)
	}
	// How many times each fact was seen again, and when it held.
	seen, valid := map[string]string{}, map[string]string{}
	for _, kv := range strs(`[...document.querySelectorAll('#facts tr.fact')].map(tr => (tr.querySelector('td.text s') || tr.querySelector('td.text')).textContent + '=' + tr.querySelector('td.seen').textContent + '=' + tr.querySelector('td.valid').textContent)`) {
		parts := strings.Split(kv, "=")
		seen[parts[0]], valid[parts[0]] = parts[1], parts[2]
	}
	for _, fv := range aliceFacts() {
		if got := seen[fv.Text]; got != strconv.Itoa(fv.Reinforcements) {
			t.Errorf("fact %q shows %q reinforcements, want %d", fv.Text, got, fv.Reinforcements)
		}
	}
	if got := valid["Is on call the week of March 23"]; got != "2026-03-23 00:00:00Z – 2026-03-30 00:00:00Z" {
		t.Errorf("the on-call fact held %q", got)
	}
	if got := valid["Works on the shop's auth module"]; got != "unknown" {
		t.Errorf("a fact whose validity the source does not know held %q", got)
	}
	shot("facts.png")
	// The superseded fact leads to the row of the fact that replaced it.
	do("follow the superseded fact to its successor", chromedp.Click(chromedp.CSS(`#facts tr.superseded .supersession a`)))
	if got := strs(`[document.querySelector(location.hash + ' td.text').textContent]`); !slices.Equal(got, []string{"Prefers Go and Rust for backend services"}) {
		t.Errorf("the superseded fact's link leads to %q", got)
	}
	// Its history: the chain to its successor, and its changes.
	do("open the superseded fact's history",
		chromedp.Click(chromedp.CSS(`#facts tr.superseded a.history`)),
		chromedp.WaitVisible(chromedp.CSS("#changes")))
	if got := strs(`[...document.querySelectorAll('#chain li')].map(li => li.className.trim() + ':' + li.querySelector('b, a').textContent)`); !slices.Equal(got, []string{
		"this superseded:Prefers Go for backend services", ":Prefers Go and Rust for backend services"}) {
		t.Errorf("the supersession chain: %q", got)
	}
	if got := strs(`[...document.querySelectorAll('#changes li.fact-change')].map(li => li.dataset.action)`); !slices.Equal(got, []string{"superseded", "updated", "added"}) {
		t.Errorf("the fact's changes: %q", got)
	}
	if got := text(`#changes li[data-action="updated"] pre.diff ins`); got != " for backend services" {
		t.Errorf("the edit inserted %q", got)
	}
	shot("fact-history.png")
	do("follow the chain to the successor's history",
		chromedp.Click(chromedp.CSS(`#chain li a`)),
		chromedp.WaitVisible(chromedp.CSS("#changes")))
	if got := strs(`[...document.querySelectorAll('#changes li.fact-change')].map(li => li.dataset.action)`); !slices.Equal(got, []string{"added"}) {
		t.Errorf("the successor's changes: %q", got)
	}

	// Recall: the tenant's entries only.
	do("search recall",
		chromedp.Navigate(srv.URL+"/recall"),
		chromedp.SetValue(chromedp.CSS(`input[name=q]`), "bcrypt CompareHashAndPassword"),
		chromedp.Submit(chromedp.CSS(`form.controls`)),
		chromedp.WaitVisible(chromedp.CSS("#hits")))
	hits := strs(`[...document.querySelectorAll('#hits li.hit a')].map(a => a.textContent)`)
	if len(hits) == 0 {
		t.Fatal("no recall hits")
	}
	for _, h := range hits {
		if h == "acme-secret" {
			t.Errorf("recall showed another tenant's session: %q", hits)
		}
	}
	// The words that match are highlighted; a scope narrows the search.
	if marks := strs(`[...document.querySelectorAll('#hits mark')].map(m => m.textContent.toLowerCase())`); !slices.Contains(marks, "bcrypt") {
		t.Errorf("highlighted words %q, want bcrypt among them", marks)
	}
	shot("recall.png")
	do("search recall in one session",
		chromedp.SetValue(chromedp.CSS(`input[name=scope]`), "session:plan-sprint"),
		chromedp.Submit(chromedp.CSS(`form.controls`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name=scope][value="session:plan-sprint"]`)))
	for _, h := range strs(`[...document.querySelectorAll('#hits li.hit a:not(.aside)')].map(a => a.getAttribute('href'))`) {
		if !strings.HasPrefix(h, "/sessions/plan-sprint/") {
			t.Errorf("scope session:plan-sprint shows %s", h)
		}
	}
}

// compareFloat compares two numbers written as text.
func compareFloat(a, b string) int {
	x, _ := strconv.ParseFloat(a, 64)
	y, _ := strconv.ParseFloat(b, 64)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
