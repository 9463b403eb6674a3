package server

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/facts"
)

// TestFactsPages: the list of a user's facts (without q or k) is a page
// of at most page_size facts, most confident first, with a token that
// reads the rest; following the tokens gives every fact once, in order,
// even as confidences decay between pages.
func TestFactsPages(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	n := 2*api.DefaultFactsPageSize + 5
	for i := range n {
		// Four confidences, so that ties are broken by ID.
		_, err := e.srv.cfg.Facts.Remember(context.Background(), facts.RememberRequest{UserID: "alice",
			Text: fmt.Sprintf("Collects stamp %d.", i), Confidence: 0.3 + 0.2*float64(i%4)})
		if err != nil {
			t.Fatal(err)
		}
	}
	if fs, _ := e.srv.cfg.Facts.List(context.Background(), "", "alice", false); len(fs) != n {
		t.Fatalf("%d facts remembered, want %d", len(fs), n)
	}
	var first api.FactsResponse
	e.must(200, "GET", "/v1/users/alice/facts", nil).json(t, &first)
	if len(first.Facts) != api.DefaultFactsPageSize || first.NextPageToken == "" {
		t.Fatalf("the first page of %d facts: %d facts, next_page_token %q", n, len(first.Facts), first.NextPageToken)
	}
	var all []api.FactView
	q := url.Values{"page_size": {"30"}}
	for pages := 1; ; pages++ {
		var page api.FactsResponse
		e.must(200, "GET", "/v1/users/alice/facts?"+q.Encode(), nil).json(t, &page)
		all = append(all, page.Facts...)
		if page.NextPageToken == "" {
			if pages != 7 {
				t.Errorf("%d pages of 30 for %d facts", pages, n)
			}
			break
		}
		q.Set("page_token", page.NextPageToken)
		now = now.Add(24 * time.Hour) // decay goes on between pages
	}
	ids := map[string]bool{}
	for _, f := range all {
		ids[f.ID] = true
	}
	if len(all) != n || len(ids) != n {
		t.Fatalf("%d facts, %d distinct; want %d", len(all), len(ids), n)
	}
	sorted := slices.Clone(all)
	sortByConfidence(sorted)
	if !slices.EqualFunc(all, sorted, func(a, b api.FactView) bool { return a.ID == b.ID }) {
		t.Error("the pages are not in the list's order")
	}

	for _, tc := range []struct{ query, field, says string }{
		{"page_size=0", "page_size", fmt.Sprintf("from 1 to %d", api.MaxFactsPageSize)},
		{fmt.Sprintf("page_size=%d", api.MaxFactsPageSize+1), "page_size", fmt.Sprintf("from 1 to %d", api.MaxFactsPageSize)},
		{"page_token=AAAA", "page_token", "next_page_token"},
		{"q=item&page_size=5", "page_size", "without q or k"},
		{"k=3&page_token=" + first.NextPageToken, "page_token", "without q or k"},
		{"k=201", "k", "from 1 to 200"},
	} {
		ae := e.must(400, "GET", "/v1/users/alice/facts?"+tc.query, nil).apiErr(t)
		if ae.Field != tc.field || !strings.Contains(ae.Message, tc.says) {
			t.Errorf("%s: %+v, want %s saying %q", tc.query, ae, tc.field, tc.says)
		}
	}
}
