// Package blockstest is the conformance suite every blocks.Store backend
// runs, so that the in-memory, SQLite and PostgreSQL backends cannot drift
// apart. A backend's test calls Run once:
//
//	func TestConformance(t *testing.T) {
//		blockstest.Run(t, blockstest.Config{
//			New: func(t *testing.T) blocks.Store { ... a new, empty store ... },
//			Share: func(t *testing.T, st blocks.Store) blocks.Store { ... a second handle on st's database ... },
//		})
//	}
//
// The suite drives each store through a blocks.Memory with a manual
// clock, so that times are checked exactly. Subtests are grouped by
// behaviour (Blocks, Edits, Limit, ReadOnly, History, Versions, Owners,
// BadInput, Concurrency, Close, Import), so one group can be run alone with
// go test -run 'Conformance/Edits'.
package blockstest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
)

// Config describes the backend under test.
type Config struct {
	// New returns a new, empty store, isolated from the stores of other
	// subtests. The suite closes it when the subtest ends.
	New func(t *testing.T) blocks.Store
	// Share, when set, returns a second store over the same database as
	// st, as another process would open it. The concurrency tests then
	// spread their writers over both, so that the compare-and-set is
	// checked in the database and not only in one process. The suite
	// closes it.
	Share func(t *testing.T, st blocks.Store) blocks.Store
	// Writers is the number of concurrent writers; zero means 12.
	Writers int
}

// Run runs the conformance suite against the backend cfg describes.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.New == nil {
		t.Fatal("blockstest: Config.New is required")
	}
	if cfg.Writers <= 0 {
		cfg.Writers = 12
	}
	s := &suite{cfg: cfg}
	groups := []struct {
		name  string
		tests []test
	}{
		{"Blocks", []test{{"SetGetList", s.setGetList}, {"Unchanged", s.unchanged}}},
		{"Edits", []test{{"Append", s.appendText}, {"Replace", s.replace}, {"ReplaceMismatch", s.replaceMismatch}, {"Missing", s.missing}}},
		{"Limit", []test{{"Refused", s.limitRefused}, {"Characters", s.limitCharacters}}},
		{"ReadOnly", []test{{"AgentRefused", s.readOnly}}},
		{"History", []test{{"Changes", s.history}, {"Bounded", s.historyBounded}, {"Delete", s.deleteHistory}}},
		{"Versions", []test{{"IfVersion", s.ifVersion}, {"CompareAndSet", s.compareAndSet}}},
		{"Owners", []test{{"Isolation", s.isolation}, {"DeleteOwner", s.deleteOwner}}},
		{"BadInput", []test{{"Refused", s.badInput}}},
		{"Concurrency", []test{{"Appends", s.concurrentAppends}}},
		{"Close", []test{{"Closed", s.closed}}},
		{"Import", []test{{"RoundTrip", s.importRoundTrip}, {"Conflict", s.importConflict}, {"Lister", s.lister}}},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, tc.fn)
			}
		})
	}
}

type test struct {
	name string
	fn   func(t *testing.T)
}

type suite struct{ cfg Config }

// clock is a manual clock, safe for concurrent use.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// t0 is the suite's starting time, with nanoseconds the stores drop.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC)

// open returns a new store, closed when the test ends, a Memory over it
// and its clock.
func (s *suite) open(t *testing.T) (blocks.Store, *blocks.Memory, *clock) {
	t.Helper()
	st := s.cfg.New(t)
	t.Cleanup(func() { st.Close() })
	c := &clock{now: t0}
	return st, blocks.New(st, blocks.Options{Clock: c.Now, Retries: 1000}), c
}

var ctx = context.Background()

func key(label string) blocks.Key {
	return blocks.Key{Tenant: "acme", Owner: blocks.User("alice"), Label: label}
}

func ptr[T any](v T) *T { return &v }

// must returns a function that fails the test on an error and returns
// the block otherwise: must(t)(m.Set(...)).
func must(t *testing.T) func(blocks.Block, error) blocks.Block {
	return func(b blocks.Block, err error) blocks.Block {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// same fails the test if the store's block differs from want.
func same(t *testing.T, st blocks.Store, want blocks.Block) {
	t.Helper()
	got, err := st.Get(ctx, want.Key)
	if err != nil {
		t.Fatalf("get %s: %v", want.Label, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored block:\n%+v\nwant\n%+v", got, want)
	}
}

func (s *suite) setGetList(t *testing.T) {
	st, m, c := s.open(t)
	b := must(t)(m.Set(ctx, blocks.SetRequest{Key: key("persona"), Value: "I am a careful assistant.", Description: ptr("who the agent is"), Edit: blocks.Edit{By: "api"}}))
	at := t0.Truncate(time.Microsecond)
	want := blocks.Block{Key: key("persona"), Value: "I am a careful assistant.", Limit: blocks.DefaultLimit, Description: "who the agent is",
		Version: 1, CreatedAt: at, UpdatedAt: at, UpdatedBy: "api"}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("set returned\n%+v\nwant\n%+v", b, want)
	}
	same(t, st, want)
	c.Advance(time.Minute)
	b = must(t)(m.Set(ctx, blocks.SetRequest{Key: key("persona"), Value: "I am terse.", Limit: 100, ReadOnly: ptr(true), Edit: blocks.Edit{By: "op"}}))
	want.Value, want.Limit, want.ReadOnly, want.Version, want.UpdatedAt, want.UpdatedBy = "I am terse.", 100, true, 2, at.Add(time.Minute), "op"
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("rewrite returned\n%+v\nwant\n%+v", b, want)
	}
	same(t, st, want)
	must(t)(m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: ""}))
	must(t)(m.Set(ctx, blocks.SetRequest{Key: key("a-task_1"), Value: "x"}))
	list, err := m.List(ctx, "acme", blocks.User("alice"))
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, b := range list {
		labels = append(labels, b.Label)
	}
	if strings.Join(labels, ",") != "a-task_1,human,persona" {
		t.Fatalf("list: %v, want by label", labels)
	}
	if !reflect.DeepEqual(list[2], want) {
		t.Fatalf("listed %+v", list[2])
	}
	if _, err := m.Get(ctx, key("nothing")); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("get of a missing block: %v", err)
	}
	if list, err := m.List(ctx, "acme", blocks.User("bob")); err != nil || len(list) != 0 {
		t.Fatalf("list of a user without blocks: %v %v", list, err)
	}
}

// unchanged: a set that changes nothing writes no version.
func (s *suite) unchanged(t *testing.T) {
	st, m, c := s.open(t)
	b := must(t)(m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: "Alice.", Limit: 50}))
	c.Advance(time.Second)
	again := must(t)(m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: "Alice."}))
	if !reflect.DeepEqual(again, b) {
		t.Fatalf("the same set made %+v of %+v", again, b)
	}
	if h, _ := st.History(ctx, key("human")); len(h) != 1 {
		t.Fatalf("history %+v", h)
	}
}

func (s *suite) appendText(t *testing.T) {
	st, m, _ := s.open(t)
	must(t)(m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: ""}))
	b := must(t)(m.Append(ctx, key("human"), "Name: Alice.", blocks.Edit{By: "agent"}))
	if b.Value != "Name: Alice." || b.Version != 2 {
		t.Fatalf("append to an empty block: %+v", b)
	}
	b = must(t)(m.Append(ctx, key("human"), "Likes tea.", blocks.Edit{By: "agent"}))
	if b.Value != "Name: Alice.\nLikes tea." || b.Version != 3 || b.UpdatedBy != "agent" {
		t.Fatalf("second append: %+v", b)
	}
	same(t, st, b)
	if _, err := m.Append(ctx, key("human"), "", blocks.Edit{}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("empty append: %v", err)
	}
}

func (s *suite) replace(t *testing.T) {
	st, m, _ := s.open(t)
	must(t)(m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: "Lives in Paris. Likes tea."}))
	b := must(t)(m.Replace(ctx, key("human"), "Paris", "Lyon", blocks.Edit{By: "agent"}))
	if b.Value != "Lives in Lyon. Likes tea." || b.Version != 2 {
		t.Fatalf("replace: %+v", b)
	}
	b = must(t)(m.Replace(ctx, key("human"), " Likes tea.", "", blocks.Edit{By: "agent"}))
	if b.Value != "Lives in Lyon." || b.Version != 3 {
		t.Fatalf("replace with nothing: %+v", b)
	}
	same(t, st, b)
}

func (s *suite) replaceMismatch(t *testing.T) {
	st, m, _ := s.open(t)
	b := must(t)(m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: "tea, tea and coffee"}))
	for old, count := range map[string]int{"tea": 2, "milk": 0} {
		_, err := m.Replace(ctx, key("human"), old, "x", blocks.Edit{})
		var me *blocks.MatchError
		if !errors.As(err, &me) || me.Count != count || !errors.Is(err, blocks.ErrNoMatch) || !errors.Is(err, agentmem.ErrInvalid) {
			t.Fatalf("replace %q: %v, want a *MatchError counting %d", old, err, count)
		}
	}
	if _, err := m.Replace(ctx, key("human"), "", "x", blocks.Edit{}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("replace of nothing: %v", err)
	}
	same(t, st, b)
}

func (s *suite) missing(t *testing.T) {
	_, m, _ := s.open(t)
	for name, err := range map[string]error{
		"append":  func() error { _, err := m.Append(ctx, key("none"), "x", blocks.Edit{}); return err }(),
		"replace": func() error { _, err := m.Replace(ctx, key("none"), "x", "y", blocks.Edit{}); return err }(),
		"delete":  m.Delete(ctx, key("none"), blocks.Edit{}),
		"history": func() error { _, err := m.History(ctx, key("none")); return err }(),
	} {
		if !errors.Is(err, agentmem.ErrNotFound) {
			t.Errorf("%s of a missing block: %v", name, err)
		}
	}
}

func (s *suite) limitRefused(t *testing.T) {
	st, m, _ := s.open(t)
	if _, err := m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: "12345678901", Limit: 10}); !isLimit(err, "value", 11, 10) {
		t.Fatalf("a new block over its limit: %v", err)
	}
	if _, err := st.Get(ctx, key("human")); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("a refused block was stored: %v", err)
	}
	b := must(t)(m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: "123456", Limit: 10}))
	if _, err := m.Append(ctx, key("human"), "abcd", blocks.Edit{}); !isLimit(err, "text", 11, 10) {
		t.Fatalf("append over the limit: %v", err)
	}
	b = must(t)(m.Replace(ctx, key("human"), "6", "67890", blocks.Edit{}))
	if b.Value != "1234567890" {
		t.Fatalf("a replace up to the limit: %+v", b)
	}
	if _, err := m.Replace(ctx, key("human"), "0", "0!", blocks.Edit{}); !isLimit(err, "new", 11, 10) {
		t.Fatalf("replace over the limit: %v", err)
	}
	if _, err := m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: "1234567890", Limit: 5}); !isLimit(err, "limit", 10, 5) {
		t.Fatalf("a limit below the value: %v", err)
	}
	if _, err := m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: "x", Limit: blocks.MaxLimit + 1}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("a limit over MaxLimit: %v", err)
	}
	same(t, st, b)
}

// isLimit reports whether err is the *LimitError described.
func isLimit(err error, field string, chars, limit int) bool {
	var le *blocks.LimitError
	return errors.As(err, &le) && le.Field == field && le.Chars == chars && le.Limit == limit &&
		errors.Is(err, blocks.ErrOverLimit) && errors.Is(err, agentmem.ErrInvalid)
}

// limitCharacters: the limit counts characters, not bytes.
func (s *suite) limitCharacters(t *testing.T) {
	st, m, _ := s.open(t)
	v := "Zoë à Noël ☕"
	b := must(t)(m.Set(ctx, blocks.SetRequest{Key: key("human"), Value: v, Limit: 12}))
	if len(v) <= 12 || b.Chars() != 12 {
		t.Fatalf("%q: %d bytes, %d characters", v, len(v), b.Chars())
	}
	same(t, st, b)
	if _, err := m.Append(ctx, key("human"), "é", blocks.Edit{}); !isLimit(err, "text", 14, 12) {
		t.Fatalf("append: %v", err)
	}
}

func (s *suite) readOnly(t *testing.T) {
	st, m, _ := s.open(t)
	must(t)(m.Set(ctx, blocks.SetRequest{Key: key("persona"), Value: "Be kind.", ReadOnly: ptr(true)}))
	agent := blocks.Edit{By: "agent", Agent: true}
	for name, err := range map[string]error{
		"append":  func() error { _, err := m.Append(ctx, key("persona"), "x", agent); return err }(),
		"replace": func() error { _, err := m.Replace(ctx, key("persona"), "kind", "rude", agent); return err }(),
		"set": func() error {
			_, err := m.Set(ctx, blocks.SetRequest{Key: key("persona"), Value: "x", Edit: agent})
			return err
		}(),
		"unlock": func() error {
			_, err := m.Set(ctx, blocks.SetRequest{Key: key("persona"), Value: "Be kind.", ReadOnly: ptr(false), Edit: agent})
			return err
		}(),
		"delete": m.Delete(ctx, key("persona"), agent),
	} {
		var ro *blocks.ReadOnlyError
		if !errors.As(err, &ro) || !errors.Is(err, blocks.ErrReadOnly) || !errors.Is(err, agentmem.ErrConflict) {
			t.Errorf("the agent's %s of a read-only block: %v", name, err)
		}
	}
	// The application may write it.
	b := must(t)(m.Set(ctx, blocks.SetRequest{Key: key("persona"), Value: "Be very kind.", Edit: blocks.Edit{By: "api"}}))
	if !b.ReadOnly || b.Version != 2 {
		t.Fatalf("%+v", b)
	}
	same(t, st, b)
}

func (s *suite) history(t *testing.T) {
	_, m, c := s.open(t)
	k := key("human")
	must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: "A", Edit: blocks.Edit{By: "api"}}))
	c.Advance(time.Second)
	must(t)(m.Append(ctx, k, "B", blocks.Edit{By: "agent-1"}))
	c.Advance(time.Second)
	must(t)(m.Replace(ctx, k, "B", "C", blocks.Edit{By: "agent-2"}))
	c.Advance(time.Second)
	must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: "D", Edit: blocks.Edit{By: "op"}}))
	h, err := m.History(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Truncate(time.Microsecond)
	want := []blocks.Change{
		{Version: 1, Action: blocks.ActionCreated, By: "api", At: at, Before: "", After: "A"},
		{Version: 2, Action: blocks.ActionAppended, By: "agent-1", At: at.Add(time.Second), Before: "A", After: "A\nB"},
		{Version: 3, Action: blocks.ActionReplaced, By: "agent-2", At: at.Add(2 * time.Second), Before: "A\nB", After: "A\nC"},
		{Version: 4, Action: blocks.ActionSet, By: "op", At: at.Add(3 * time.Second), Before: "A\nC", After: "D"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("history:\n%+v\nwant\n%+v", h, want)
	}
}

func (s *suite) historyBounded(t *testing.T) {
	_, m, _ := s.open(t)
	k := key("log")
	must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: "0", Limit: blocks.MaxLimit}))
	n := blocks.MaxHistory + 5
	for i := 1; i < n; i++ {
		must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: fmt.Sprint(i)}))
	}
	h, err := m.History(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != blocks.MaxHistory || h[0].Version != int64(n-blocks.MaxHistory+1) || h[len(h)-1].Version != int64(n) {
		t.Fatalf("history of %d changes: %d kept, versions %d to %d; want the newest %d", n, len(h), h[0].Version, h[len(h)-1].Version, blocks.MaxHistory)
	}
}

// deleteHistory: deleting a block deletes its history; a block made again
// with the label starts anew.
func (s *suite) deleteHistory(t *testing.T) {
	st, m, _ := s.open(t)
	k := key("human")
	must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: "secret"}))
	must(t)(m.Append(ctx, k, "more", blocks.Edit{}))
	if err := m.Delete(ctx, k, blocks.Edit{By: "api"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, k); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if h, err := st.History(ctx, k); err != nil || len(h) != 0 {
		t.Fatalf("history after delete: %+v %v", h, err)
	}
	b := must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: "new"}))
	if h, err := m.History(ctx, k); b.Version != 1 || err != nil || len(h) != 1 || h[0].Before != "" {
		t.Fatalf("a block made again: %+v, history %+v %v", b, h, err)
	}
}

func (s *suite) ifVersion(t *testing.T) {
	st, m, _ := s.open(t)
	k := key("human")
	must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: "A"}))
	b := must(t)(m.Append(ctx, k, "B", blocks.Edit{IfVersion: 1}))
	for name, err := range map[string]error{
		"append":  func() error { _, err := m.Append(ctx, k, "C", blocks.Edit{IfVersion: 1}); return err }(),
		"replace": func() error { _, err := m.Replace(ctx, k, "A", "C", blocks.Edit{IfVersion: 1}); return err }(),
		"set": func() error {
			_, err := m.Set(ctx, blocks.SetRequest{Key: k, Value: "C", Edit: blocks.Edit{IfVersion: 3}})
			return err
		}(),
		"delete": m.Delete(ctx, k, blocks.Edit{IfVersion: 1}),
	} {
		var ve *blocks.VersionError
		if !errors.As(err, &ve) || ve.Current != 2 || !errors.Is(err, agentmem.ErrConflict) {
			t.Errorf("%s at a stale version: %v", name, err)
		}
	}
	same(t, st, b)
	_, err := m.Set(ctx, blocks.SetRequest{Key: key("none"), Value: "x", Edit: blocks.Edit{IfVersion: 1}})
	var ve *blocks.VersionError
	if !errors.As(err, &ve) || ve.Current != 0 {
		t.Fatalf("set of a missing block at version 1: %v", err)
	}
	if err := m.Delete(ctx, k, blocks.Edit{IfVersion: 2}); err != nil {
		t.Fatal(err)
	}
}

// compareAndSet checks the Store's own contract.
func (s *suite) compareAndSet(t *testing.T) {
	st, _, _ := s.open(t)
	at := t0.Truncate(time.Microsecond)
	b := blocks.Block{Key: key("k"), Value: "v1", Limit: 10, Version: 1, CreatedAt: at, UpdatedAt: at}
	ch := func(b blocks.Block, before string) blocks.Change {
		return blocks.Change{Version: b.Version, Action: blocks.ActionSet, At: at, Before: before, After: b.Value}
	}
	if err := st.Put(ctx, b, ch(b, "")); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, b, ch(b, "")); !errors.Is(err, blocks.ErrStale) {
		t.Fatalf("a second creation: %v", err)
	}
	b3 := b
	b3.Value, b3.Version = "v3", 3
	if err := st.Put(ctx, b3, ch(b3, "v1")); !errors.Is(err, blocks.ErrStale) {
		t.Fatalf("a put skipping a version: %v", err)
	}
	bad := b
	bad.Version = 2
	bad.Value = strings.Repeat("x", 11)
	if err := st.Put(ctx, bad, ch(bad, "v1")); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("a put over the limit: %v", err)
	}
	if err := st.Delete(ctx, b.Key, 2); !errors.Is(err, blocks.ErrStale) {
		t.Fatalf("delete at a stale version: %v", err)
	}
	same(t, st, b)
	if h, err := st.History(ctx, b.Key); err != nil || len(h) != 1 {
		t.Fatalf("history: %+v %v", h, err)
	}
	if err := st.Delete(ctx, b.Key, 1); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, b.Key, 1); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("delete of a deleted block: %v", err)
	}
}

// isolation: tenants, users and sessions of the same ID, and labels are
// apart.
func (s *suite) isolation(t *testing.T) {
	_, m, _ := s.open(t)
	keys := []blocks.Key{
		{Tenant: "acme", Owner: blocks.User("x"), Label: "notes"},
		{Tenant: "acme", Owner: blocks.Session("x"), Label: "notes"},
		{Tenant: "other", Owner: blocks.User("x"), Label: "notes"},
		{Tenant: "", Owner: blocks.User("x"), Label: "notes"},
		{Tenant: "acme", Owner: blocks.User("x"), Label: "Notes"},
	}
	for i, k := range keys {
		must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: fmt.Sprint(i)}))
	}
	for i, k := range keys {
		b := must(t)(m.Get(ctx, k))
		if b.Value != fmt.Sprint(i) || b.Version != 1 {
			t.Errorf("%+v: %+v", k, b)
		}
		list, err := m.List(ctx, k.Tenant, k.Owner)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if k.Tenant == "acme" && k.Owner == blocks.User("x") {
			want = 2 // labels are case-sensitive: notes and Notes
		}
		if len(list) != want {
			t.Errorf("list of %s/%s: %d blocks, want %d", k.Tenant, k.Owner, len(list), want)
		}
	}
}

func (s *suite) deleteOwner(t *testing.T) {
	_, m, _ := s.open(t)
	for _, o := range []blocks.Owner{blocks.Session("s1"), blocks.Session("s2")} {
		for _, l := range []string{"a", "b"} {
			must(t)(m.Set(ctx, blocks.SetRequest{Key: blocks.Key{Tenant: "acme", Owner: o, Label: l}, Value: "v"}))
		}
	}
	if err := m.DeleteOwner(ctx, "acme", blocks.Session("s1")); err != nil {
		t.Fatal(err)
	}
	if list, err := m.List(ctx, "acme", blocks.Session("s1")); err != nil || len(list) != 0 {
		t.Fatalf("after DeleteOwner: %+v %v", list, err)
	}
	if h, err := m.Store().History(ctx, blocks.Key{Tenant: "acme", Owner: blocks.Session("s1"), Label: "a"}); err != nil || len(h) != 0 {
		t.Fatalf("history after DeleteOwner: %+v %v", h, err)
	}
	if list, err := m.List(ctx, "acme", blocks.Session("s2")); err != nil || len(list) != 2 {
		t.Fatalf("another owner's: %+v %v", list, err)
	}
}

func (s *suite) badInput(t *testing.T) {
	st, m, _ := s.open(t)
	bad := map[string]blocks.Key{
		"label":     {Owner: blocks.User("u"), Label: ""},
		"digit":     {Owner: blocks.User("u"), Label: "1abc"},
		"tag":       {Owner: blocks.User("u"), Label: "a>b"},
		"space":     {Owner: blocks.User("u"), Label: "a b"},
		"long":      {Owner: blocks.User("u"), Label: "a" + strings.Repeat("b", blocks.MaxLabelBytes)},
		"owner":     {Owner: blocks.Owner{Kind: "team", ID: "t"}, Label: "a"},
		"no owner":  {Owner: blocks.User(""), Label: "a"},
		"nul owner": {Owner: blocks.Session("s\x00"), Label: "a"},
	}
	for name, k := range bad {
		if _, err := m.Set(ctx, blocks.SetRequest{Key: k, Value: "v"}); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, v := range map[string]string{"nul": "a\x00b", "utf8": "a\xffb"} {
		if _, err := m.Set(ctx, blocks.SetRequest{Key: key("k"), Value: v}); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("value %s: %v", name, err)
		}
	}
	if _, err := m.Set(ctx, blocks.SetRequest{Key: key("k"), Value: "v", Description: ptr(strings.Repeat("d", blocks.MaxDescriptionBytes+1))}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("description: %v", err)
	}
	if list, err := st.List(ctx, "acme", blocks.User("alice")); err != nil || len(list) != 0 {
		t.Fatalf("refused input was stored: %+v %v", list, err)
	}
}

// concurrentAppends: writers that append at once, over two handles of the
// database, each get their text in exactly once.
func (s *suite) concurrentAppends(t *testing.T) {
	st, m, _ := s.open(t)
	memories := []*blocks.Memory{m}
	if s.cfg.Share != nil {
		other := s.cfg.Share(t, st)
		t.Cleanup(func() { other.Close() })
		memories = append(memories, blocks.New(other, blocks.Options{Retries: 1000}))
	}
	k := key("log")
	must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: "start", Limit: blocks.MaxLimit}))
	var wg sync.WaitGroup
	errs := make(chan error, s.cfg.Writers)
	for i := range s.cfg.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := memories[i%len(memories)].Append(ctx, k, fmt.Sprintf("line %d", i), blocks.Edit{By: fmt.Sprint(i)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b := must(t)(m.Get(ctx, k))
	lines := strings.Split(b.Value, "\n")
	if b.Version != int64(s.cfg.Writers+1) || len(lines) != s.cfg.Writers+1 {
		t.Fatalf("version %d, %d lines after %d appends", b.Version, len(lines), s.cfg.Writers)
	}
	for i := range s.cfg.Writers {
		n := strings.Count(b.Value, fmt.Sprintf("line %d\n", i)) + strings.Count(b.Value+"\n", fmt.Sprintf("line %d\n", i))
		if n == 0 {
			t.Errorf("line %d is missing", i)
		}
	}
	h, err := m.History(ctx, k)
	if err != nil || len(h) != s.cfg.Writers+1 {
		t.Fatalf("history of %d changes: %d %v", s.cfg.Writers+1, len(h), err)
	}
	for i, c := range h {
		if c.Version != int64(i+1) || (i > 0 && c.Before != h[i-1].After) {
			t.Fatalf("history is not a chain at %d: %+v", i, c)
		}
	}
}

func (s *suite) closed(t *testing.T) {
	st := s.cfg.New(t)
	m := blocks.New(st, blocks.Options{})
	must(t)(m.Set(ctx, blocks.SetRequest{Key: key("k"), Value: "v"}))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"get":     func() error { _, err := st.Get(ctx, key("k")); return err }(),
		"list":    func() error { _, err := st.List(ctx, "acme", blocks.User("alice")); return err }(),
		"history": func() error { _, err := st.History(ctx, key("k")); return err }(),
		"set":     func() error { _, err := m.Set(ctx, blocks.SetRequest{Key: key("k"), Value: "w"}); return err }(),
		"delete":  st.Delete(ctx, key("k"), 1),
		"owner":   st.DeleteOwner(ctx, "acme", blocks.User("alice")),
	} {
		if !errors.Is(err, blocks.ErrClosed) || !errors.Is(err, agentmem.ErrUnavailable) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}
