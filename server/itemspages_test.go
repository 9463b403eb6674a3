package server

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
)

// userItems returns n user message items, "<prefix>0" to "<prefix>n-1".
func userItems(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"role":"user","content":"%s%d"}`, prefix, from+i)
	}
	return out
}

// appendItems appends items in requests of at most api.MaxStepsPerRequest.
func (e *env) appendItems(id string, items []string) {
	e.t.Helper()
	for len(items) > 0 {
		n := min(len(items), api.MaxStepsPerRequest)
		e.must(201, "POST", "/v1/sessions/"+id+"/items", itemsBody(items[:n]...))
		items = items[n:]
	}
}

// itemsPage reads a page of items.
func (e *env) itemsPage(id string, q url.Values) api.ItemsResponse {
	e.t.Helper()
	var page api.ItemsResponse
	path := "/v1/sessions/" + id + "/items"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	e.must(200, "GET", path, nil).json(e.t, &page)
	return page
}

// readAllItems follows the pages of a read of items from q and returns
// the items and the number of pages.
func (e *env) readAllItems(id string, q url.Values) ([]string, int) {
	e.t.Helper()
	var all []string
	pages := 0
	for {
		page := e.itemsPage(id, q)
		pages++
		for _, it := range page.Items {
			all = append(all, string(it))
		}
		if page.NextPageToken == "" {
			return all, pages
		}
		q = url.Values{"page_token": {page.NextPageToken}, "page_size": q["page_size"]}
		if pages > 100 {
			e.t.Fatal("more than 100 pages")
		}
	}
}

// TestItemsPages: a read of a session with more items than a page
// returns one bounded page and a token that reads the rest; following
// the tokens gives every item, in order, as of the first page.
func TestItemsPages(t *testing.T) {
	itemsPagesScenario(t, newEnv(t))
}

func TestItemsPagesOnSQLite(t *testing.T) {
	st := sqliteStore(t)
	itemsPagesScenario(t, envOn(t, st))
}

func TestItemsPagesOnPostgres(t *testing.T) {
	st := postgresStore(t)
	itemsPagesScenario(t, envOn(t, st))
}

func itemsPagesScenario(t *testing.T, e *env) {
	e.create("big")
	want := userItems("m", 0, 2*api.DefaultItemsPageSize+5)
	e.appendItems("big", want)

	first := e.itemsPage("big", nil)
	if len(first.Items) != api.DefaultItemsPageSize || first.NextPageToken == "" {
		t.Fatalf("the first page of %d items: %d items, next_page_token %q", len(want), len(first.Items), first.NextPageToken)
	}
	got, pages := e.readAllItems("big", nil)
	if pages != 3 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%d pages, %d items; want 3 pages of the %d items in order", pages, len(got), len(want))
	}

	// page_size, and limit: the newest limit items, a page at a time.
	got, pages = e.readAllItems("big", url.Values{"page_size": {"7"}, "limit": {"30"}})
	if pages != 5 || strings.Join(got, ",") != strings.Join(want[len(want)-30:], ",") {
		t.Fatalf("limit 30 by 7: %d pages, %v", pages, got)
	}
	got, pages = e.readAllItems("big", url.Values{"limit": {"3"}})
	if pages != 1 || strings.Join(got, ",") != strings.Join(want[len(want)-3:], ",") {
		t.Fatalf("limit 3: %d pages, %v", pages, got)
	}

	// Items appended between pages are not in the read that began before
	// them, and do not stop it.
	e.create("grow")
	e.appendItems("grow", userItems("g", 0, 10))
	page := e.itemsPage("grow", url.Values{"page_size": {"4"}})
	e.appendItems("grow", userItems("g", 10, 3))
	rest, _ := e.readAllItems("grow", url.Values{"page_token": {page.NextPageToken}})
	if len(page.Items) != 4 || strings.Join(rest, ",") != strings.Join(userItems("g", 4, 6), ",") {
		t.Fatalf("a read with appends between its pages: %s then %v", page.Items, rest)
	}

	// A pop between pages may change what an earlier page returned: the
	// next page is refused, and a new read sees the change.
	page = e.itemsPage("grow", url.Values{"page_size": {"4"}})
	e.must(200, "POST", "/v1/sessions/grow/items/pop", nil)
	ae := e.must(409, "GET", "/v1/sessions/grow/items?page_token="+page.NextPageToken, nil).apiErr(t)
	if ae.Code != api.CodeConflict || ae.Field != "page_token" {
		t.Fatalf("a page after a pop: %+v", ae)
	}
	if got, _ := e.readAllItems("grow", nil); len(got) != 12 {
		t.Fatalf("after the pop: %d items", len(got))
	}

	// Out-of-range values are refused, naming the field and the range.
	for _, tc := range []struct{ query, field, says string }{
		{"page_size=0", "page_size", fmt.Sprintf("from 1 to %d", api.MaxItemsPageSize)},
		{fmt.Sprintf("page_size=%d", api.MaxItemsPageSize+1), "page_size", fmt.Sprintf("from 1 to %d", api.MaxItemsPageSize)},
		{"limit=0", "limit", "from 1 to"},
		{"page_token=xyz", "page_token", "next_page_token"},
		{"page_token=" + (&itemsCursor{seq: 1, off: 3, end: 3}).token(), "page_token", "next_page_token"},
		{"limit=2&page_token=" + page.NextPageToken, "limit", "page_token"},
	} {
		ae := e.must(400, "GET", "/v1/sessions/grow/items?"+tc.query, nil).apiErr(t)
		if ae.Field != tc.field || !strings.Contains(ae.Message, tc.says) {
			t.Errorf("%s: %+v, want %s saying %q", tc.query, ae, tc.field, tc.says)
		}
	}
}

// TestItemsPageBytes: a page stops before the item that would take it
// past api.MaxItemsPageBytes, but holds at least one item.
func TestItemsPageBytes(t *testing.T) {
	e := newEnv(t)
	e.create("large")
	big := strings.Repeat("x", 1_000_000)
	var want []string
	for i := range 10 {
		it := fmt.Sprintf(`{"role":"user","content":"%d%s"}`, i, big)
		want = append(want, it)
		e.must(201, "POST", "/v1/sessions/large/items", itemsBody(it))
	}
	q := url.Values{}
	var sizes []int
	var got []string
	for {
		r := e.must(200, "GET", "/v1/sessions/large/items?"+q.Encode(), nil)
		var page api.ItemsResponse
		r.json(t, &page)
		if len(r.body) > api.MaxItemsPageBytes+4096 {
			t.Errorf("a page of %d bytes", len(r.body))
		}
		sizes = append(sizes, len(page.Items))
		for _, it := range page.Items {
			got = append(got, string(it))
		}
		if page.NextPageToken == "" {
			break
		}
		q = url.Values{"page_token": {page.NextPageToken}}
	}
	if fmt.Sprint(sizes) != "[8 2]" || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages of %v items", sizes)
	}
}
