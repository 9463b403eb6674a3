package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/client"
)

// itemsOf returns n user message items numbered from 0.
func itemsOf(n int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(fmt.Sprintf(`{"role":"user","content":"m%d"}`, i))
	}
	return out
}

// appendAll appends items in requests of at most api.MaxStepsPerRequest.
func appendAll(t *testing.T, c *client.Client, id string, items []json.RawMessage) {
	t.Helper()
	for len(items) > 0 {
		n := min(len(items), api.MaxStepsPerRequest)
		if _, err := c.AppendItems(context.Background(), id, items[:n], client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		items = items[n:]
	}
}

// sameItems fails the test unless got is want.
func sameItems(t *testing.T, what string, got, want []json.RawMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d items, want %d", what, len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != string(want[i]) {
			t.Fatalf("%s: item %d is %s, want %s", what, i, got[i], want[i])
		}
	}
}

// pagesSeen counts the item pages a client reads and, after the first
// page of the first read, runs between (once).
type pagesSeen struct {
	mu      sync.Mutex
	pages   int
	between func()
	once    sync.Once
}

func (p *pagesSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/items") {
		p.mu.Lock()
		p.pages++
		p.mu.Unlock()
		if p.between != nil && err == nil && resp.StatusCode == http.StatusOK {
			p.once.Do(p.between)
		}
	}
	return resp, err
}

// TestItemsPages: Items reads every page of a session with more items
// than a page, so it returns every item (the newest limit with limit),
// and reads again from the first page when a pop changes the items
// between two pages.
func TestItemsPages(t *testing.T) {
	ctx := context.Background()
	ts, _ := newTestServer(t, fixedClock)
	seen := &pagesSeen{}
	c, err := client.New(ts.URL, client.WithHTTPClient(&http.Client{Transport: seen}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "big"}); err != nil {
		t.Fatal(err)
	}
	want := itemsOf(2*api.DefaultItemsPageSize + 3)
	appendAll(t, c, "big", want)
	got, err := c.Items(ctx, "big", 0)
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, "all", got, want)
	if seen.pages != 3 {
		t.Errorf("read %d pages, want 3", seen.pages)
	}
	got, err = c.Items(ctx, "big", api.DefaultItemsPageSize+1)
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, "the newest page and one", got, want[len(want)-api.DefaultItemsPageSize-1:])

	// A pop between the first page and the second: the read starts over
	// and returns the items without the one popped.
	other, err := client.New(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	seen.pages = 0
	seen.between = func() {
		if _, err := other.PopItem(ctx, "big", client.PopOptions{}); err != nil {
			t.Error(err)
		}
	}
	got, err = c.Items(ctx, "big", 0)
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, "after a pop between pages", got, want[:len(want)-1])
	if seen.pages != 5 { // 2 before the conflict, 3 again
		t.Errorf("read %d pages, want 5", seen.pages)
	}
}

// TestSearchFactsPages: SearchFacts without Text or K lists every fact of
// a user with more facts than a page of the server's list.
func TestSearchFactsPages(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil, withLongTerm)
	n := api.DefaultFactsPageSize + 7
	for i := range n {
		if _, err := c.Remember(ctx, "alice", api.RememberRequest{Text: fmt.Sprintf("Collects stamp %d.", i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.SearchFacts(ctx, "alice", client.FactsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, f := range got {
		ids[f.ID] = true
	}
	if len(got) != n || len(ids) != n {
		t.Fatalf("%d facts, %d distinct; want %d", len(got), len(ids), n)
	}
	if top, err := c.SearchFacts(ctx, "alice", client.FactsQuery{K: 3}); err != nil || len(top) != 3 {
		t.Fatalf("k=3: %d facts, %v", len(top), err)
	}
}
