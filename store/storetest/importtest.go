package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

func (s *suite) closeTests() []namedTest {
	return []namedTest{
		{"ErrClosed", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "x"})
			if e.st.Supports(store.CanPing) {
				if err := e.st.Ping(e.ctx); err != nil {
					t.Fatalf("Ping of an open store: %v", err)
				}
			}
			if err := e.st.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			ctx := e.ctx
			calls := map[string]func() error{
				"Create": func() error { _, err := e.st.Create(ctx, store.CreateRequest{ID: "y"}); return err },
				"Get":    func() error { _, err := e.st.Get(ctx, "", "x"); return err },
				"List":   func() error { _, err := e.st.List(ctx, store.ListRequest{}); return err },
				"Delete": func() error { return e.st.Delete(ctx, "", "x") },
				"Append": func() error {
					_, err := e.st.Append(ctx, store.AppendRequest{SessionID: "x", Steps: steps("s", 1)})
					return err
				},
				"Read":  func() error { _, err := e.st.Read(ctx, store.ReadRequest{SessionID: "x"}); return err },
				"Prune": func() error { _, err := e.st.Prune(ctx, store.PruneRequest{}); return err },
			}
			if e.st.Supports(store.CanPing) {
				calls["Ping"] = func() error { return e.st.Ping(ctx) }
			}
			if e.st.Supports(store.CanImport) {
				calls["ImportEntries"] = func() error {
					return e.st.ImportEntries(ctx, &store.Session{ID: "z", Retention: store.SessionRetention, CreatedAt: Epoch, UpdatedAt: Epoch}, nil)
				}
			}
			for name, call := range calls {
				e.wantErr(call(), store.ErrClosed, name+" after Close")
			}
		}},
	}
}

// importer returns the store as a store.Importer, or skips the test.
func (e *env) importer() store.Importer {
	e.t.Helper()
	if !e.st.Supports(store.CanImport) {
		e.t.Skip("the store's driver does not implement store.Importer")
	}
	return e.st
}

func (e *env) importString(data string, opts store.ImportOptions) (*store.Session, error) {
	return store.Import(e.ctx, e.st, strings.NewReader(data), opts)
}

func (s *suite) importTests() []namedTest {
	return []namedTest{
		{"RoundTrip", func(t *testing.T) {
			e := s.open(t)
			e.importer()
			e.compactedSession("src")
			e.clock.Advance(time.Minute)
			e.appendSteps("src", steps("src-late", 2)...)
			e.create(store.CreateRequest{ID: "meta", Tenant: "t", UserID: "u", Agent: "a", Metadata: map[string]string{"k": "v"}, Retention: store.SingleRun, TTL: 48 * time.Hour,
				Pinning: &agentmem.Pinning{Tasks: true}, AutoCompact: &store.AutoCompact{MaxTokens: 500, Summarizer: store.SummarizerExtractive}})
			e.appendSteps("t/meta", messageStep("m1", "hi"))
			for _, id := range []string{"src", "t/meta"} {
				out := e.export(id)
				if !strings.HasPrefix(out, `{"agentmem_export":1,"session":{`) || strings.Count(out, "\n") != len(e.entries(id))+1 {
					t.Fatalf("export of %s:\n%s", id, out)
				}
				dst := e.another()
				var lines int
				var read int64
				got, err := dst.importString(out, store.ImportOptions{Progress: func(l int, b int64) { lines, read = l, b }})
				if err != nil {
					t.Fatalf("Import of %s: %v", id, err)
				}
				if lines != len(e.entries(id))+1 || read != int64(len(out)) {
					t.Fatalf("progress: %d lines, %d bytes; want %d, %d", lines, read, len(e.entries(id))+1, len(out))
				}
				if sessionLine(got) != sessionLine(e.get(id)) || sessionLine(dst.get(id)) != sessionLine(got) {
					t.Fatalf("imported session\n%s\nwant\n%s", sessionLine(dst.get(id)), sessionLine(e.get(id)))
				}
				if again := dst.export(id); again != out {
					t.Fatalf("export of the imported session differs:\n%s\nwant\n%s", again, out)
				}
				if g, w := dst.entriesJSON(dst.entries(id)), e.entriesJSON(e.entries(id)); g != w {
					t.Fatalf("imported log\n%s\nwant\n%s", g, w)
				}
				if g, w := dst.stepsJSON(dst.workingSet(id)), e.stepsJSON(e.workingSet(id)); g != w {
					t.Fatalf("imported working set\n%s\nwant\n%s", g, w)
				}
				// The imported session carries on where the original stopped.
				last := dst.get(id).LastSeq
				dst.wantSeqs(dst.appendSteps(id, steps("next", 1)...), []int64{last + 1}, "append after import")
			}
		}},
		{"BranchAndPrunedLog", func(t *testing.T) {
			e := s.open(t)
			e.importer()
			e.compactedSession("p")
			e.create(store.CreateRequest{ID: "b", ParentID: "p", ForkSeq: 6})
			e.appendSteps("b", steps("b", 2)...)
			e.clock.Advance(time.Hour)
			if _, err := e.st.Prune(e.ctx, store.PruneRequest{CoveredBefore: e.clock.Now()}); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"p", "b"} {
				out := e.export(id)
				dst := e.another()
				got, err := dst.importString(out, store.ImportOptions{})
				if err != nil {
					t.Fatalf("Import of %s: %v\n%s", id, err, out)
				}
				if got.ParentID != "" || got.ForkSeq != 0 {
					t.Fatalf("an imported branch still points at its parent: %s", sessionLine(got))
				}
				if again := dst.export(id); again != out {
					t.Fatalf("re-export of %s differs:\n%s\nwant\n%s", id, again, out)
				}
				if g, w := dst.stepsJSON(dst.workingSet(id)), e.stepsJSON(e.workingSet(id)); g != w {
					t.Fatalf("working set of imported %s:\n%s\nwant\n%s", id, g, w)
				}
			}
		}},
		{"SameStore", func(t *testing.T) {
			e := s.open(t)
			e.importer()
			e.create(store.CreateRequest{ID: "orig"})
			e.appendSteps("orig", steps("o", 3)...)
			out := e.export("orig")
			before := e.dump()
			_, err := e.importString(out, store.ImportOptions{})
			e.wantErr(err, agentmem.ErrConflict, "Import over an existing session")
			if ee := (*store.ExistsError)(nil); !errors.As(err, &ee) || ee.ID != "orig" {
				t.Fatalf("Import over an existing session: %v, want a *store.ExistsError", err)
			}
			e.wantUnchanged(before, "a refused import")
			cp, err := e.importString(out, store.ImportOptions{ID: "copy"})
			if err != nil || cp.ID != "copy" {
				t.Fatalf("Import under another ID: %v", err)
			}
			fresh, err := e.importString(out, store.ImportOptions{NewID: true})
			if err != nil || fresh.ID == "orig" || store.ValidateID(fresh.ID) != nil {
				t.Fatalf("Import under a new ID: %+v, %v", fresh, err)
			}
			for _, id := range []string{"copy", fresh.ID} {
				if g, w := e.entriesJSON(e.entries(id)), e.entriesJSON(e.entries("orig")); g != w {
					t.Fatalf("copy %s:\n%s\nwant\n%s", id, g, w)
				}
			}
			// Copies are independent sessions.
			e.appendSteps("copy", steps("c", 1)...)
			if len(e.entries("orig")) != 3 {
				t.Fatal("appending to a copy changed the original")
			}
		}},
		{"BadInput", func(t *testing.T) {
			e := s.open(t)
			e.importer()
			e.create(store.CreateRequest{ID: "src"})
			e.appendSteps("src", steps("s", 2)...)
			good := e.export("src")
			lines := strings.SplitAfter(strings.TrimSuffix(good, "\n"), "\n")
			header, l1, l2 := lines[0], lines[1], lines[2]
			dst := e.another()
			cases := map[string]struct {
				data string
				line int // the line the error must name (0: any)
			}{
				"empty input":                  {"", 1},
				"not JSON":                     {"hello\n", 1},
				"no header":                    {l1 + l2, 1},
				"wrong version":                {strings.Replace(header, `"agentmem_export":1`, `"agentmem_export":2`, 1) + l1, 1},
				"unknown field":                {header + strings.Replace(l1, `{"seq"`, `{"bogus":1,"seq"`, 1), 2},
				"unknown step type":            {header + strings.Replace(l1, `"type":"action"`, `"type":"telepathy"`, 1), 2},
				"tool result without call":     {header + l1 + strings.Replace(l2, `"tool_calls":[{"id":"call_s-2","type":"function","function":{"name":"search","arguments":"{\"q\":\"s-2\"}"}}],`, ``, 1), 3},
				"invalid UTF-8":                {header + strings.Replace(l1, `look it up`, "look \xff it up", 1), 2},
				"seqs out of order":            {header + l2 + l1, 0},
				"number not seq":               {header + strings.Replace(l1, `"seq":1`, `"seq":2`, 1), 0},
				"blank line":                   {header + "\n" + l1, 2},
				"trailing garbage":             {header + strings.TrimSuffix(l1, "\n") + " x\n", 2},
				"unknown kind":                 {header + strings.Replace(l1, `"kind":"step"`, `"kind":"snapshot"`, 1), 2},
				"bad session ID":               {strings.Replace(header, `"id":"src"`, `"id":"x\n"`, 1), 0},
				"last_seq too small":           {strings.Replace(header, `"last_seq":2`, `"last_seq":1`, 1) + l1 + l2, 0},
				"compaction naming the future": {header + l1 + `{"seq":2,"kind":"compaction","time":"2026-01-01T00:00:00Z","compaction":{"working":[1,2]}}` + "\n", 0},
			}
			before := dst.dump()
			for name, c := range cases {
				_, err := dst.importString(c.data, store.ImportOptions{})
				dst.wantErr(err, agentmem.ErrInvalid, "Import of "+name)
				if c.line > 0 && !strings.Contains(err.Error(), fmt.Sprintf("line %d", c.line)) {
					t.Errorf("Import of %s: error %q does not name line %d", name, err, c.line)
				}
				dst.wantUnchanged(before, "a refused import ("+name+")")
			}
			if _, err := dst.importString(good, store.ImportOptions{ID: ".."}); !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("Import under a bad ID: %v", err)
			}
		}},
		{"ImportEntries", func(t *testing.T) {
			e := s.open(t)
			imp := e.importer()
			sess := &store.Session{ID: "direct", Agent: "a", Retention: store.Persistent, CreatedAt: Epoch.Add(-time.Hour), UpdatedAt: Epoch.Add(-time.Minute), LastSeq: 9}
			s3 := store.WithNumber(taskStep("d3", "three"), 3)
			s7 := store.WithNumber(summaryStep("d7", "sum", agentmem.Range{From: 1, To: 2}), 7)
			entries := []store.Entry{
				{Seq: 3, Kind: store.StepEntry, Step: s3, Time: Epoch.Add(-50 * time.Minute)},
				{Seq: 7, Kind: store.StepEntry, Step: s7, Time: Epoch.Add(-40 * time.Minute)},
				{Seq: 8, Kind: store.CompactionEntry, Compaction: &store.CompactionRecord{Working: []int64{3, 7}, Removed: []int64{1, 2}}, Time: Epoch.Add(-40 * time.Minute)},
			}
			if err := imp.ImportEntries(e.ctx, sess, entries); err != nil {
				t.Fatalf("ImportEntries: %v", err)
			}
			// The importer keeps neither argument.
			sess.Agent = "changed"
			entries[0].Step.(*agentmem.TaskStep).Task = "changed"
			if got := e.get("direct"); sessionLine(got) != sessionLine(&store.Session{ID: "direct", Agent: "a", Retention: store.Persistent, CreatedAt: Epoch.Add(-time.Hour), UpdatedAt: Epoch.Add(-time.Minute), LastSeq: 9}) {
				t.Fatalf("imported session: %s", sessionLine(got))
			}
			got := e.entries("direct")
			e.wantSeqs(seqsOf(got), []int64{3, 7, 8}, "imported log with gaps")
			if g := e.encode(got[0].Step); g != e.numbered(taskStep("d3", "three"), 3) {
				t.Fatalf("imported step: %s", g)
			}
			e.wantTime(got[1].Time, Epoch.Add(-40*time.Minute), "imported entry time")
			e.wantSteps(e.workingSet("direct"), []string{e.numbered(taskStep("d3", "three"), 3), e.encode(s7)}, "imported working set")
			e.wantSeqs(e.appendSteps("direct", steps("n", 1)...), []int64{10}, "append after LastSeq 9")

			before := e.dump()
			err := imp.ImportEntries(e.ctx, &store.Session{ID: "direct", Retention: store.SessionRetention, CreatedAt: Epoch, UpdatedAt: Epoch}, nil)
			e.wantExists(err, "direct", "ImportEntries over an existing session")
			for name, c := range map[string]struct {
				s *store.Session
				e []store.Entry
			}{
				"a parent":       {&store.Session{ID: "x", ParentID: "direct", ForkSeq: 1, LastSeq: 1, Retention: store.SessionRetention, CreatedAt: Epoch, UpdatedAt: Epoch}, nil},
				"no retention":   {&store.Session{ID: "x", CreatedAt: Epoch, UpdatedAt: Epoch}, nil},
				"seq past last":  {&store.Session{ID: "x", Retention: store.SessionRetention, CreatedAt: Epoch, UpdatedAt: Epoch, LastSeq: 2}, []store.Entry{{Seq: 3, Kind: store.StepEntry, Step: s3, Time: Epoch}}},
				"number not seq": {&store.Session{ID: "x", Retention: store.SessionRetention, CreatedAt: Epoch, UpdatedAt: Epoch, LastSeq: 5}, []store.Entry{{Seq: 4, Kind: store.StepEntry, Step: s3, Time: Epoch}}},
				"no time":        {&store.Session{ID: "x", Retention: store.SessionRetention, CreatedAt: Epoch, UpdatedAt: Epoch, LastSeq: 5}, []store.Entry{{Seq: 3, Kind: store.StepEntry, Step: s3}}},
				"bad ID":         {&store.Session{ID: "a\tb", Retention: store.SessionRetention, CreatedAt: Epoch, UpdatedAt: Epoch}, nil},
			} {
				e.wantErr(imp.ImportEntries(e.ctx, c.s, c.e), agentmem.ErrInvalid, "ImportEntries with "+name)
				e.wantUnchanged(before, "a refused ImportEntries ("+name+")")
			}
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			_, err = store.Import(ctx, e.st, bytes.NewReader([]byte(e.export("direct"))), store.ImportOptions{NewID: true})
			e.wantErr(err, context.Canceled, "Import with a canceled context")
			e.wantUnchanged(before, "a canceled import")
		}},
	}
}
