package inspector_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/inspector"
)

// newBlocks returns blocks of alice, of fix-login and of other owners and
// tenants, each made by the edits the blocks package records, at times of
// clk:
//
//	user alice    human  "Name: Alice.\nLikes coffee." (created, appended, replaced)
//	user alice    task   hidden by fix-login's task
//	session fix-login task  read-only
//	user bob      human
//	tenant acme, user alice human  ACME-CONFIDENTIAL
func newBlocks(t testing.TB, clk func() time.Time) *blocks.Memory {
	t.Helper()
	ctx := context.Background()
	bm := blocks.New(blocks.NewMemStore(), blocks.Options{Clock: clk})
	desc, ro := "What we know about the user", true
	human := blocks.Key{Owner: blocks.User("alice"), Label: "human"}
	for _, err := range []error{
		set(bm, blocks.SetRequest{Key: human, Value: "Name: Alice.", Limit: 2000, Description: &desc, Edit: blocks.Edit{By: "api"}}),
		errOf(bm.Append(ctx, human, "Likes tea.", blocks.Edit{By: "coder", Agent: true})),
		errOf(bm.Replace(ctx, human, "tea", "coffee", blocks.Edit{By: "coder", Agent: true})),
		set(bm, blocks.SetRequest{Key: blocks.Key{Owner: blocks.User("alice"), Label: "task"}, Value: "The user's task, hidden by the session's."}),
		set(bm, blocks.SetRequest{Key: blocks.Key{Owner: blocks.Session("fix-login"), Label: "task"}, Value: "Fix the login bug.", ReadOnly: &ro}),
		set(bm, blocks.SetRequest{Key: blocks.Key{Owner: blocks.User("bob"), Label: "human"}, Value: "Name: Bob."}),
		set(bm, blocks.SetRequest{Key: blocks.Key{Tenant: "acme", Owner: blocks.User("alice"), Label: "human"}, Value: "ACME-CONFIDENTIAL block"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return bm
}

func set(bm *blocks.Memory, req blocks.SetRequest) error {
	_, err := bm.Set(context.Background(), req)
	return err
}

func errOf(_ blocks.Block, err error) error { return err }

// blockRow is a block as a page lists it.
type blockRow struct {
	owner, label, value string
	classes             string
}

var (
	groupRe = regexp.MustCompile(`(?s)<div class="blockgroup" data-owner="(\w+)">\s*<h4><span class="label">\w+</span> <a href="[^"]*">([^<]*)</a></h4>(.*?)</div>\n`)
	rowRe   = regexp.MustCompile(`(?s)<tr class="block([^"]*)" data-label="([^"]*)" data-version="\d+">.*?<td class="value">(?:<pre>(.*?)</pre>|<span class="empty">empty</span>)</td>`)
)

// listedBlocks returns the blocks a page lists, by owner ("user alice").
func listedBlocks(body string) []blockRow {
	var out []blockRow
	for _, g := range groupRe.FindAllStringSubmatch(body, -1) {
		for _, r := range rowRe.FindAllStringSubmatch(g[3], -1) {
			out = append(out, blockRow{owner: g[1] + " " + html.UnescapeString(g[2]), label: r[2], value: html.UnescapeString(r[3]), classes: strings.TrimSpace(r[1])})
		}
	}
	return out
}

// TestSessionPageShowsBlocks: a session's first page lists the blocks
// its contexts show, its user's then its own, with the user's block that
// the session's hides marked so; nobody else's.
func TestSessionPageShowsBlocks(t *testing.T) {
	f := newFixture(t, inspector.Config{Blocks: newBlocks(t, tickClock(t0))})
	body := mustGet(t, f.in, "/sessions/fix-login", http.StatusOK)
	if !strings.Contains(body, `<section class="blocks" id="blocks">`) {
		t.Fatal("the session's page has no blocks section")
	}
	want := []blockRow{
		{"user alice", "human", "Name: Alice.\nLikes coffee.", ""},
		{"user alice", "task", "The user's task, hidden by the session's.", "hidden"},
		{"session fix-login", "task", "Fix the login bug.", "read-only"},
	}
	if got := listedBlocks(body); !slices.Equal(got, want) {
		t.Errorf("blocks listed:\n%q\nwant\n%q", got, want)
	}
	for _, s := range []string{
		`<div class="desc">What we know about the user</div>`,
		`<span class="chars">26/2000</span>`,
		`<a href="/blocks?label=human&amp;user=alice">v3</a>`,
		`<span class="by">by coder</span>`,
		`<a class="aside" href="/blocks?user=alice">blocks</a>`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("the session's page lacks %s", s)
		}
	}
	if strings.Contains(body, "Bob") || strings.Contains(body, "ACME") {
		t.Error("the session's page shows blocks of another user or tenant")
	}
	// Only the first page has them.
	if body := mustGet(t, f.in, "/sessions/fix-login?after=5", http.StatusOK); strings.Contains(body, `id="blocks"`) {
		t.Error("a later page of the timeline lists the blocks again")
	}
	// A session without a user lists its own blocks only; without a
	// blocks source the page has no section.
	if got := listedBlocks(mustGet(t, f.in, "/sessions/fix-login-retry", http.StatusOK)); len(got) != 0 {
		t.Errorf("fix-login-retry, without blocks or a user, lists %q", got)
	}
	if body := mustGet(t, newFixture(t, inspector.Config{}).in, "/sessions/fix-login", http.StatusOK); strings.Contains(body, `id="blocks"`) {
		t.Error("without a blocks source the session's page has a blocks section")
	}
}

// versions returns the versions a block's page lists, newest first, as
// "VERSION ACTION by BY: DIFF", the diff's deletions in [-...-] and its
// insertions in {+...+}.
func versions(body string) []string {
	re := regexp.MustCompile(`(?s)<li class="version" id="v(\d+)" data-version="\d+" data-action="(\w+)">.*?(?:<span class="by">by ([^<]*)</span>)?</div>\n<pre class="diff">(.*?)</pre>`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		d := strings.NewReplacer("<del>", "[-", "</del>", "-]", "<ins>", "{+", "</ins>", "+}").Replace(m[4])
		out = append(out, m[1]+" "+m[2]+" by "+m[3]+": "+html.UnescapeString(d))
	}
	return out
}

// TestBlockVersions: a block's page shows the block and every version,
// newest first, each with who made it, when, and what it changed.
func TestBlockVersions(t *testing.T) {
	bm := newBlocks(t, tickClock(t0))
	f := newFixture(t, inspector.Config{Blocks: bm})
	body := mustGet(t, f.in, "/blocks?user=alice&label=human", http.StatusOK)
	want := []string{
		"3 replaced by coder: Name: Alice.\nLikes [-tea-]{+coffee+}.",
		"2 appended by coder: Name: Alice.{+\nLikes tea.+}",
		"1 created by api: {+Name: Alice.+}",
	}
	if got := versions(body); !slices.Equal(got, want) {
		t.Errorf("versions:\n%q\nwant\n%q", got, want)
	}
	for _, s := range []string{
		`<code id="block-label">human</code>`,
		`<a id="block-owner" href="/?user=alice">alice</a>`,
		`<dd id="block-version">3</dd>`,
		`<p class="desc" id="block-description">What we know about the user</p>`,
		`<pre class="blockvalue" id="block-value">Name: Alice.` + "\n" + `Likes coffee.</pre>`,
		`<pre class="before">Name: Alice.` + "\n" + `Likes tea.</pre>`,
		`<p class="empty">none: this change created the block</p>`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("the block's page lacks %s", s)
		}
	}
	if strings.Contains(body, `id="history-cut"`) {
		t.Error("a block with its whole history says versions were dropped")
	}
	// A session's block, and a change of its read-only flag only.
	body = mustGet(t, f.in, "/blocks?session=fix-login&label=task", http.StatusOK)
	if !strings.Contains(body, `<dd id="block-readonly">yes`) || !strings.Contains(body, `<a id="block-owner" href="/sessions/fix-login">fix-login</a>`) {
		t.Error("the session's read-only block is not shown as such")
	}
	off := false
	if err := set(bm, blocks.SetRequest{Key: blocks.Key{Owner: blocks.Session("fix-login"), Label: "task"}, Value: "Fix the login bug.", ReadOnly: &off}); err != nil {
		t.Fatal(err)
	}
	body = mustGet(t, f.in, "/blocks?session=fix-login&label=task", http.StatusOK)
	if !strings.Contains(body, `data-action="set"`) || !strings.Contains(body, `<p class="muted same">`) || !strings.Contains(body, `<dd id="block-readonly">no`) {
		t.Error("a change of the read-only flag alone is not shown as one")
	}
}

// TestBlocksPage: the blocks page lists a user's blocks, or a session's
// with its user's, and refuses what does not name a block.
func TestBlocksPage(t *testing.T) {
	bm := newBlocks(t, tickClock(t0))
	f := newFixture(t, inspector.Config{Blocks: bm})
	if got := listedBlocks(mustGet(t, f.in, "/blocks?user=alice", http.StatusOK)); len(got) != 2 || got[0].label != "human" || got[1].label != "task" || got[1].classes != "" {
		t.Errorf("alice's blocks: %q", got)
	}
	if got, want := listedBlocks(mustGet(t, f.in, "/blocks?session=fix-login", http.StatusOK)), listedBlocks(mustGet(t, f.in, "/sessions/fix-login", http.StatusOK)); !slices.Equal(got, want) {
		t.Errorf("fix-login's blocks page lists %q, its session page %q", got, want)
	}
	if body := mustGet(t, f.in, "/blocks?user=nobody", http.StatusOK); !strings.Contains(body, "No blocks.") {
		t.Error("a user without blocks is not said to have none")
	}
	if body := mustGet(t, f.in, "/blocks", http.StatusOK); !strings.Contains(body, "Give a user or a session ID") {
		t.Error("the blocks page without an owner does not ask for one")
	}
	if body := mustGet(t, newFixture(t, inspector.Config{}).in, "/blocks?user=alice", http.StatusOK); !strings.Contains(body, `id="not-configured"`) {
		t.Error("without a blocks source the page does not say blocks are not configured")
	}
	for target, status := range map[string]int{
		"/blocks?user=alice&label=nothing":         http.StatusNotFound,
		"/blocks?user=bob&label=task":              http.StatusNotFound,
		"/blocks?session=nope":                     http.StatusNotFound,
		"/blocks?session=acme-secret":              http.StatusNotFound, // another tenant's session
		"/blocks?user=alice&label=%3Cb%3E":         http.StatusBadRequest,
		"/blocks?user=alice&session=fix-login":     http.StatusBadRequest,
		"/blocks?label=human":                      http.StatusBadRequest,
		"/blocks?user=" + strings.Repeat("u", 300): http.StatusBadRequest,
		"/blocks?user=%ff":                         http.StatusBadRequest,
	} {
		if resp, body := get(t, f.in, target); resp.StatusCode != status {
			t.Errorf("GET %s: %d, want %d\n%s", target, resp.StatusCode, status, body)
		}
	}
	// Tenants see their own blocks only.
	acme := newFixture(t, inspector.Config{Blocks: bm, Tenant: func(*http.Request) (string, error) { return "acme", nil }})
	if body := mustGet(t, acme.in, "/blocks?user=alice&label=human", http.StatusOK); !strings.Contains(body, "ACME-CONFIDENTIAL block") {
		t.Error("tenant acme does not see its block")
	}
	for _, target := range []string{"/blocks?user=alice", "/blocks?user=alice&label=human", "/sessions/fix-login"} {
		if body := mustGet(t, f.in, target, http.StatusOK); strings.Contains(body, "ACME") {
			t.Errorf("GET %s shows tenant acme's block", target)
		}
	}
}

// TestBlockPagesAreBounded: a long block shows its first MaxShownText
// bytes, and its versions show what changed with a little of the text
// around it, however long the value; a history past blocks.MaxHistory
// says which versions it no longer has.
func TestBlockPagesAreBounded(t *testing.T) {
	ctx := context.Background()
	bm := blocks.New(blocks.NewMemStore(), blocks.Options{Clock: tickClock(t0)})
	f := newFixture(t, inspector.Config{Blocks: bm})
	k := blocks.Key{Owner: blocks.Session("fix-login"), Label: "notes"}
	long := strings.Repeat("note ", 18_000) // 90,000 characters
	if err := set(bm, blocks.SetRequest{Key: k, Value: long, Limit: blocks.MaxLimit}); err != nil {
		t.Fatal(err)
	}
	if err := errOf(bm.Append(ctx, k, "THE END", blocks.Edit{By: "agent"})); err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, f.in, "/sessions/fix-login", http.StatusOK)
	rows := listedBlocks(body)
	if len(rows) != 1 || len(rows[0].value) > inspector.MaxShownText+200 || !strings.Contains(rows[0].value, "more bytes not shown") {
		t.Fatalf("the long block is listed with %d bytes", len(rows[0].value))
	}
	body = mustGet(t, f.in, "/blocks?session=fix-login&label=notes", http.StatusOK)
	if got := versions(body); len(got) != 2 || !strings.HasSuffix(got[0], "note note {+\nTHE END+}") || !strings.HasPrefix(got[0], `2 appended by agent: <span class="cut">…89840 bytes before</span>note`) {
		t.Errorf("the append to a long block shows as %.300q", got)
	}
	// The value, its version of 90,000 characters before and after, and
	// its creation: each shown up to MaxShownText.
	if len(body) > 8*inspector.MaxShownText {
		t.Errorf("the page of a block of 90,000 characters is %d bytes", len(body))
	}

	human := blocks.Key{Owner: blocks.User("alice"), Label: "human"}
	if err := set(bm, blocks.SetRequest{Key: human, Value: "x"}); err != nil {
		t.Fatal(err)
	}
	for range blocks.MaxHistory + 5 { // versions 1 to 106, the newest 100 kept
		if err := errOf(bm.Append(ctx, human, "x", blocks.Edit{})); err != nil {
			t.Fatal(err)
		}
	}
	body = mustGet(t, f.in, "/blocks?user=alice&label=human", http.StatusOK)
	if n := strings.Count(body, `<li class="version"`); n != blocks.MaxHistory {
		t.Errorf("%d versions listed, want the %d kept", n, blocks.MaxHistory)
	}
	if !strings.Contains(body, `<p class="note" id="history-cut">The history keeps a block’s newest 100 changes: the versions before 7 are not kept.</p>`) {
		t.Error("the page does not say which versions are no longer kept")
	}
}

// TestBlocksAreEscaped: what users and agents write into blocks (values,
// descriptions, who changed them, owners' IDs) is shown as text.
func TestBlocksAreEscaped(t *testing.T) {
	evil := `"><script>alert(1)</script><img src=x onerror=alert(2)>`
	bm := blocks.New(blocks.NewMemStore(), blocks.Options{})
	f := newFixture(t, inspector.Config{Blocks: bm})
	for _, o := range []blocks.Owner{blocks.User(evil), blocks.User("alice"), blocks.Session("fix-login")} {
		k := blocks.Key{Owner: o, Label: "human"}
		desc := evil
		if err := set(bm, blocks.SetRequest{Key: k, Value: evil, Description: &desc, Edit: blocks.Edit{By: evil}}); err != nil {
			t.Fatal(err)
		}
		if err := errOf(bm.Replace(context.Background(), k, "<script>", "<script src=//evil.example>", blocks.Edit{By: evil})); err != nil {
			t.Fatal(err)
		}
	}
	q := url.QueryEscape(evil)
	for _, target := range []string{"/sessions/fix-login", "/blocks?session=fix-login", "/blocks?user=" + q, "/blocks?user=" + q + "&label=human",
		"/blocks?user=alice&label=human", "/blocks?session=fix-login&label=human"} {
		body := mustGet(t, f.in, target, http.StatusOK)
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") {
			t.Errorf("GET %s carries the markup unescaped", target)
		}
		checkMarkup(t, target, body)
	}
}

// templateMarkup returns the element and attribute names the inspector's
// templates use.
func templateMarkup(t testing.TB) (elems, attrs map[string]bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("templates", "*.html"))
	if err != nil || len(files) == 0 {
		t.Fatalf("templates: %v", err)
	}
	elems, attrs = map[string]bool{}, map[string]bool{}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		text := actionRe.ReplaceAllString(string(data), " ")
		for _, m := range tagRe.FindAllStringSubmatch(text, -1) {
			elems[strings.ToLower(m[1])] = true
			for _, a := range attrRe.FindAllStringSubmatch(m[2], -1) {
				attrs[strings.ToLower(a[1])] = true
			}
		}
	}
	return elems, attrs
}

var (
	actionRe = regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	tagRe    = regexp.MustCompile(`<\/?([a-zA-Z][a-zA-Z0-9]*|!doctype)((?:[^>"]|"[^"]*")*)>`)
	attrRe   = regexp.MustCompile(`(?:^|\s)([a-zA-Z][a-zA-Z0-9:_-]*)(?:="[^"]*")?`)
)

// checkMarkup fails the test if body has markup the templates do not
// make (markupErrors).
func checkMarkup(t testing.TB, target, body string) {
	t.Helper()
	elems, attrs := templateMarkup(t)
	for _, e := range markupErrors(elems, attrs, body) {
		t.Errorf("GET %s: %s", target, e)
	}
}

// markupErrors lists the markup of body that is not the templates': an
// element or attribute they do not use, or a '<' that does not start a
// tag. Whatever data a page shows, escaped, adds none.
func markupErrors(elems, attrs map[string]bool, body string) []string {
	var out []string
	rest := body
	for {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			return out
		}
		rest = rest[i:]
		m := tagRe.FindStringSubmatchIndex(rest)
		if m == nil || m[0] != 0 {
			return append(out, fmt.Sprintf("markup %.60q is not a tag", rest))
		}
		if name := strings.ToLower(rest[m[2]:m[3]]); !elems[name] {
			out = append(out, fmt.Sprintf("element %q is not one of the templates'", name))
		}
		for _, a := range attrRe.FindAllStringSubmatch(rest[m[4]:m[5]], -1) {
			if !attrs[strings.ToLower(a[1])] {
				out = append(out, fmt.Sprintf("attribute %q is not one of the templates'", a[1]))
			}
		}
		rest = rest[m[1]:]
	}
}

// TestMarkupErrors: the check of the escaping tests finds markup that
// the templates do not make.
func TestMarkupErrors(t *testing.T) {
	elems, attrs := templateMarkup(t)
	for body, bad := range map[string]bool{
		`<p class="empty">x &lt;script&gt;</p>`:   false,
		`<p class="empty"><script>x</script></p>`: true,
		`<pre><img src=x onerror=alert(1)></pre>`: true,
		`<a href="/" onclick="x">`:                true,
		`<pre>a < b</pre>`:                        true,
	} {
		if got := markupErrors(elems, attrs, body); (len(got) > 0) != bad {
			t.Errorf("markupErrors(%q) = %q", body, got)
		}
	}
}

// rawBlocks is a BlocksSource that returns one block and its history as
// given, unchecked, for the fuzz test: the pages must not rely on the
// blocks package's checks of labels and values to show them safely.
type rawBlocks struct {
	b    blocks.Block
	hist []blocks.Change
}

func (s *rawBlocks) List(_ context.Context, _ string, o blocks.Owner) ([]blocks.Block, error) {
	if o != s.b.Owner {
		return nil, nil
	}
	return []blocks.Block{s.b}, nil
}

func (s *rawBlocks) Get(_ context.Context, k blocks.Key) (blocks.Block, error) {
	if k.Owner != s.b.Owner {
		return blocks.Block{}, blocks.NotFound(k)
	}
	return s.b, nil
}

func (s *rawBlocks) History(context.Context, blocks.Key) ([]blocks.Change, error) { return s.hist, nil }

// FuzzBlockPages shows a block of arbitrary label, value, description,
// author and history on a session's page and on the block's: every page
// is served, with no markup but the templates'.
func FuzzBlockPages(f *testing.F) {
	evil := `"><script>alert(1)</script><img src=x onerror=alert(2)>`
	f.Add("human", "Name: Ann.\nLikes tea.", "Name: Ann.", "what we know", "agent")
	f.Add(evil, evil, "", evil, evil)
	f.Add("x", "café <b>", "cafê </b>", "\xff\xfe", "</pre><pre>")
	src := &rawBlocks{}
	fx := newFixture(f, inspector.Config{Blocks: src})
	elems, attrs := templateMarkup(f)
	f.Fuzz(func(t *testing.T, label, value, before, desc, by string) {
		src.b = blocks.Block{Key: blocks.Key{Owner: blocks.Session("plan-sprint"), Label: label}, Value: value, Limit: 10,
			Description: desc, Version: 2, UpdatedBy: by, CreatedAt: t0, UpdatedAt: t0}
		src.hist = []blocks.Change{
			{Version: 1, Action: blocks.ActionCreated, By: by, At: t0, After: before},
			{Version: 2, Action: blocks.Action(label), By: by, At: t0, Before: before, After: value},
		}
		for _, target := range []string{"/sessions/plan-sprint", "/blocks?session=plan-sprint", "/blocks?session=plan-sprint&label=human"} {
			resp, body := get(t, fx.in, target)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", target, resp.StatusCode, body)
			}
			if errs := markupErrors(elems, attrs, body); len(errs) > 0 {
				t.Fatalf("GET %s: %q", target, errs)
			}
		}
	})
}

// TestContextSaysBlocksAreLeftOut: "what the model saw" rebuilds the
// steps of a call, not the blocks as they were then; it says how many
// blocks the session's contexts show, and links to them.
func TestContextSaysBlocksAreLeftOut(t *testing.T) {
	f := newFixture(t, inspector.Config{Blocks: newBlocks(t, tickClock(t0))})
	body := mustGet(t, f.in, "/sessions/fix-login/context?at=3", http.StatusOK)
	// alice's human and fix-login's task, which hides alice's task.
	if !strings.Contains(body, `also show <b>2</b> memory blocks`) || !strings.Contains(body, `<a href="/blocks?session=fix-login">`) {
		t.Error("the context page does not say which blocks it leaves out")
	}
	if body := mustGet(t, f.in, "/sessions/chat-tools/context", http.StatusOK); !strings.Contains(body, `id="blocks-left-out"`) {
		t.Error("chat-tools, of alice, does not say alice's blocks are left out")
	}
	if body := mustGet(t, f.in, "/sessions/fix-login-retry/context", http.StatusOK); strings.Contains(body, `id="blocks-left-out"`) {
		t.Error("a session without blocks says blocks are left out")
	}
}
