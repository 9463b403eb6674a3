package inspector_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// rowsFrom lists a timeline page's rows as "seq:from", from being the
// session an inherited row comes from ("" for the session's own), with
// "fork" where the page draws the fork point.
func rowsFrom(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	re := regexp.MustCompile(`<li class="(entry [^"]*)" id="e(\d+)" data-seq="\d+" data-kind="[a-z_]+"(?: data-tokens="\d+")?(?: data-from="([^"]*)")?>|<li class="fork" id="fork"`)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		if m[2] == "" {
			out = append(out, "fork")
			continue
		}
		if inherited := strings.Contains(m[1], " inherited"); inherited != (m[3] != "") {
			t.Errorf("row #%s: class %q, from %q", m[2], m[1], m[3])
		}
		out = append(out, m[2]+":"+m[3])
	}
	return out
}

// TestBranchTimeline: a branch's timeline shows the entries it inherited
// as inherited, from the session whose log holds them, with the fork
// point drawn between them and its own; its parent lists it.
func TestBranchTimeline(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, inspector.Config{})
	// A branch of the branch, after its own first step.
	if _, err := f.st.Create(ctx, store.CreateRequest{ID: "retry-2", ParentID: "fix-login-retry", ForkSeq: seqRetryRun}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Append(ctx, store.AppendRequest{SessionID: "retry-2", Steps: []agentmem.Step{&agentmem.FinalAnswerStep{StepInfo: agentmem.StepInfo{ID: "r2"}, Answer: "Done."}}}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for seq := 1; seq <= seqRerun; seq++ {
		want = append(want, fmt.Sprintf("%d:fix-login", seq))
	}
	want = append(want, "fork", fmt.Sprintf("%d:", seqRetryRun), fmt.Sprintf("%d:", seqRetryAnswer))
	body := mustGet(t, f.in, "/sessions/fix-login-retry", http.StatusOK)
	if got := rowsFrom(t, body); !slices.Equal(got, want) {
		t.Errorf("fix-login-retry's rows %q, want %q", got, want)
	}
	for _, s := range []string{
		`<span class="from">from <a href="/sessions/fix-login">fix-login</a></span>`, // an inherited row's origin
		fmt.Sprintf(`the entries above, up to #%d, were inherited from <a href="/sessions/fix-login">fix-login</a>; those below are this branch’s own`, seqRerun),
	} {
		if !strings.Contains(body, s) {
			t.Errorf("the branch's page does not show %q", s)
		}
	}
	// Its branch inherits from both: each entry from the log that holds it.
	want = want[:0]
	for seq := 1; seq <= seqRerun; seq++ {
		want = append(want, fmt.Sprintf("%d:fix-login", seq))
	}
	want = append(want, fmt.Sprintf("%d:fix-login-retry", seqRetryRun), "fork", fmt.Sprintf("%d:", seqRetryRun+1))
	if got := rowsFrom(t, mustGet(t, f.in, "/sessions/retry-2", http.StatusOK)); !slices.Equal(got, want) {
		t.Errorf("retry-2's rows %q, want %q", got, want)
	}

	// The parents list their branches: ID, fork point, link.
	branches := func(id string) []string {
		t.Helper()
		var out []string
		body := mustGet(t, f.in, "/sessions/"+id, http.StatusOK)
		for _, m := range regexp.MustCompile(`<tr class="branch"><td><a class="id" href="(/sessions/[^"]*)">([^<]*)</a></td><td class="num">#(\d+)</td>`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[2]+"@"+m[3]+"="+m[1])
		}
		return out
	}
	for id, want := range map[string][]string{
		"fix-login":       {fmt.Sprintf("fix-login-retry@%d=/sessions/fix-login-retry", seqRerun)},
		"fix-login-retry": {fmt.Sprintf("retry-2@%d=/sessions/retry-2", seqRetryRun)},
		"retry-2":         nil,
		"plan-sprint":     nil,
	} {
		if got := branches(id); !slices.Equal(got, want) {
			t.Errorf("%s lists the branches %q, want %q", id, got, want)
		}
	}
	if got := listed(mustGet(t, f.in, "/?parent=fix-login", http.StatusOK)); !slices.Equal(got, []string{"fix-login-retry"}) {
		t.Errorf("the sessions list of fix-login's branches: %q", got)
	}
	// A session with more branches than a page lists links to all.
	for i := range inspector.MaxBranchesShown + 1 {
		if _, err := f.st.Create(ctx, store.CreateRequest{ID: fmt.Sprintf("plan-%02d", i), ParentID: "plan-sprint"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := branches("plan-sprint"); len(got) != inspector.MaxBranchesShown || got[0] != fmt.Sprintf("plan-%02d@1=/sessions/plan-%02d", inspector.MaxBranchesShown, inspector.MaxBranchesShown) {
		t.Errorf("plan-sprint lists %d branches, from %q: want the newest %d", len(got), got, inspector.MaxBranchesShown)
	}
	if body := mustGet(t, f.in, "/sessions/plan-sprint", http.StatusOK); !strings.Contains(body, `<a id="all-branches" href="/?parent=plan-sprint">`) {
		t.Error("plan-sprint's page does not link to all its branches")
	}
	if got := listed(mustGet(t, f.in, "/?parent=plan-sprint&size=100", http.StatusOK)); len(got) != inspector.MaxBranchesShown+1 {
		t.Errorf("the sessions list of plan-sprint's branches: %d", len(got))
	}

	// A call the branch inherited pending, whose result arrived in the
	// branch, says so.
	if _, err := f.st.Create(ctx, store.CreateRequest{ID: "chat-b", ParentID: "chat-tools", ForkSeq: seqChatRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := newStoreService(t, f.st).AppendMessages(ctx, sessions.MessagesRequest{SessionID: "chat-b", Messages: []agentmem.Message{{Role: agentmem.RoleTool, ToolCallID: "call_read", Content: agentmem.Text("another file")}}}); err != nil {
		t.Fatal(err)
	}
	chat := mustGet(t, f.in, "/sessions/chat-b", http.StatusOK)
	if got := rowsFrom(t, chat); !slices.Equal(got, []string{"1:chat-tools", "2:chat-tools", "3:chat-tools", "fork"}) {
		t.Errorf("chat-b's rows %q", got)
	}
	if got := arrivalsIn(rowBlocks(chat)[seqChatRead]); len(got) != 1 || !strings.HasPrefix(got[seqChatRead+1], "result of read_file arrived in this branch +") {
		t.Errorf("chat-b's #3 says %v", got)
	}

	// Paged, the fork point is drawn on the page that holds it.
	p := newFixture(t, inspector.Config{TimelinePage: 5})
	for q, want := range map[string][]string{
		"":          {"1:fix-login", "2:fix-login", "3:fix-login", "4:fix-login", "5:fix-login"},
		"?after=5":  {"6:fix-login", "7:fix-login", "8:fix-login", "9:fix-login", "10:fix-login", "fork"},
		"?after=10": {"11:", "12:"},
	} {
		if got := rowsFrom(t, mustGet(t, p.in, "/sessions/fix-login-retry"+q, http.StatusOK)); !slices.Equal(got, want) {
			t.Errorf("%s: rows %q, want %q", q, got, want)
		}
	}

	// A branch whose parent was deleted keeps its history, still marked
	// as inherited from the parent.
	if err := f.st.Delete(ctx, "", "fix-login"); err != nil {
		t.Fatal(err)
	}
	if got := rowsFrom(t, mustGet(t, f.in, "/sessions/fix-login-retry", http.StatusOK)); !slices.Contains(got, "1:fix-login") || !slices.Contains(got, "fork") {
		t.Errorf("fix-login-retry's rows after fix-login's deletion: %q", got)
	}
	// A session created later with the deleted one's ID is unrelated to
	// its branches: it does not list them.
	if _, err := f.st.Create(ctx, store.CreateRequest{ID: "fix-login"}); err != nil {
		t.Fatal(err)
	}
	if got := branches("fix-login"); len(got) != 0 {
		t.Errorf("the new fix-login lists the old one's branches %q", got)
	}
	if body := mustGet(t, f.in, "/?parent=..", http.StatusBadRequest); !strings.Contains(body, "parent") {
		t.Error("a bad parent filter does not name the parameter")
	}
}
