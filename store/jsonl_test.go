package store_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedClock() func() time.Time { return func() time.Time { return t0 } }

// sample builds a session with a compaction in a new memstore.
func sample(t testing.TB) (*store.Store, string) {
	t.Helper()
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: fixedClock()})
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s", Agent: "a", Metadata: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{ID: "1"}, Content: "sys"},
		&agentmem.PlanningStep{StepInfo: agentmem.StepInfo{ID: "2"}, Plan: "plan"},
		&agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: "3"}, ToolCalls: []agentmem.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}, Results: []agentmem.ToolResult{{CallID: "c", Content: "long result"}}},
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: steps}); err != nil {
		t.Fatal(err)
	}
	trunc := store.WithNumber(steps[2].(*agentmem.ActionStep).Truncate(4), 3)
	sum := &agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "4"}, Summary: "so far", Covers: []agentmem.Range{{From: 2, To: 2}}}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{sum}, Compaction: &store.CompactionRecord{
		Working: []int64{1, store.NewStepRef(0), 3}, Replaced: []agentmem.Step{trunc}, Removed: []int64{2},
	}}); err != nil {
		t.Fatal(err)
	}
	return st, "s"
}

func export(t testing.TB, st *store.Store, id string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := store.Export(context.Background(), st, "", id, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestExportFormat(t *testing.T) {
	st, id := sample(t)
	got := export(t, st, id)
	want := `{"agentmem_export":1,"session":{"id":"s","agent":"a","metadata":{"k":"v"},"retention":"session","created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:00:00Z","last_seq":5}}
{"seq":1,"kind":"step","time":"2026-03-01T12:00:00Z","step":{"type":"system_prompt","number":1,"id":"1","content":"sys"}}
{"seq":2,"kind":"step","time":"2026-03-01T12:00:00Z","step":{"type":"planning","number":2,"id":"2","plan":"plan"}}
{"seq":3,"kind":"step","time":"2026-03-01T12:00:00Z","step":{"type":"action","number":3,"id":"3","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}],"results":[{"call_id":"c","content":"long result"}]}}
{"seq":4,"kind":"step","time":"2026-03-01T12:00:00Z","step":{"type":"summary","number":4,"id":"4","summary":"so far","covers":[{"from":2,"to":2}]}}
{"seq":5,"kind":"compaction","time":"2026-03-01T12:00:00Z","compaction":{"working":[1,4,3],"replaced":[{"type":"action","number":3,"id":"3","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}],"results":[{"call_id":"c","content":"long\n…[truncated 7 bytes]"}]}],"removed":[2]}}
`
	if got != want {
		t.Fatalf("export:\n%s\nwant\n%s", got, want)
	}
}

func TestImportNeedsImporter(t *testing.T) {
	st, id := sample(t)
	data := export(t, st, id)
	_, err := store.Import(context.Background(), store.New(noImport{st}), strings.NewReader(data), store.ImportOptions{})
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "Importer") {
		t.Fatalf("Import into a store without Importer: %v", err)
	}
}

// CheckOnly checks an export as an import would, refusing what it
// refuses, and writes nothing, even to a store that cannot import.
func TestImportCheckOnly(t *testing.T) {
	st, id := sample(t)
	data := export(t, st, id)
	dst := memstore.New(memstore.Options{})
	s, err := store.Import(context.Background(), store.New(noImport{dst}), strings.NewReader(data), store.ImportOptions{CheckOnly: true, Tenant: "acme"})
	if err != nil || s.ID != id || s.Tenant != "acme" || s.LastSeq != 5 {
		t.Fatalf("Import CheckOnly = %+v, %v", s, err)
	}
	if _, err := dst.Get(context.Background(), "acme", id); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("CheckOnly wrote the session: %v", err)
	}
	bad := strings.Replace(data, `"seq":2,`, `"seq":1,`, 1)
	if _, err := store.Import(context.Background(), dst, strings.NewReader(bad), store.ImportOptions{CheckOnly: true}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("CheckOnly of a log out of order = %v, want ErrInvalid", err)
	}
}

// EncodeEntry and DecodeEntry are the lines of an export's log.
func TestEncodeDecodeEntry(t *testing.T) {
	st, id := sample(t)
	lines := strings.Split(strings.TrimSpace(export(t, st, id)), "\n")[1:]
	resp, err := st.Read(context.Background(), store.ReadRequest{SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range resp.Entries {
		b, err := store.EncodeEntry(e)
		if err != nil || string(b) != lines[i] {
			t.Fatalf("EncodeEntry(seq %d) = %s, %v; want %s", e.Seq, b, err, lines[i])
		}
		d, err := store.DecodeEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := store.EncodeEntry(d)
		if string(again) != lines[i] {
			t.Fatalf("DecodeEntry(%s) encodes as %s", b, again)
		}
	}
	for _, bad := range []string{`{"seq":1,"kind":"step","time":"2026-03-01T12:00:00Z","step":{"type":"task","task":"x"},"extra":1}`, `{"seq":1,"kind":"nap","time":"2026-03-01T12:00:00Z"}`, "{\"seq\":1,\"kind\":\"step\",\"step\":{\"type\":\"task\",\"task\":\"\xff\"}}", `[]`} {
		if _, err := store.DecodeEntry([]byte(bad)); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("DecodeEntry(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// noImport hides a store's ImportEntries.
type noImport struct{ store.Driver }

func TestImportLineLimit(t *testing.T) {
	st, id := sample(t)
	data := export(t, st, id)
	dst := memstore.New(memstore.Options{})
	_, err := store.Import(context.Background(), dst, strings.NewReader(data), store.ImportOptions{MaxLineBytes: 200})
	if !errors.Is(err, agentmem.ErrInvalid) || !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("Import with a small line limit: %v", err)
	}
	// Windows line ends and a missing final newline are fine.
	crlf := strings.ReplaceAll(strings.TrimSuffix(data, "\n"), "\n", "\r\n")
	if _, err := store.Import(context.Background(), dst, strings.NewReader(crlf), store.ImportOptions{}); err != nil {
		t.Fatalf("Import with CRLF line ends: %v", err)
	}
	if got := export(t, dst, id); got != data {
		t.Fatalf("re-export:\n%s", got)
	}
}

// FuzzImport feeds any bytes to Import into a new memstore: the result is
// an error wrapping ErrInvalid that stores nothing, or a session whose
// export imports and exports again to the same bytes.
func FuzzImport(f *testing.F) {
	st, id := sample(f)
	f.Add([]byte(export(f, st, id)))
	f.Add([]byte("{\"agentmem_export\":1,\"session\":{\"id\":\"x\",\"retention\":\"persistent\",\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"2026-01-01T00:00:00Z\",\"last_seq\":0}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		dst := memstore.New(memstore.Options{Clock: fixedClock()})
		s, err := store.Import(ctx, dst, bytes.NewReader(data), store.ImportOptions{MaxLineBytes: 1 << 20})
		if err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("Import error %v does not wrap ErrInvalid", err)
			}
			if resp, _ := dst.List(ctx, store.ListRequest{}); len(resp.Sessions) != 0 {
				t.Fatal("a failed import stored a session")
			}
			return
		}
		// The session may have expired at once: read it at its own time.
		if s.Expired(t0) {
			return
		}
		out := export(t, dst, s.ID)
		again := memstore.New(memstore.Options{Clock: fixedClock()})
		if _, err := store.Import(ctx, again, strings.NewReader(out), store.ImportOptions{}); err != nil {
			t.Fatalf("re-import of an export failed: %v\n%s", err, out)
		}
		if out2 := export(t, again, s.ID); out2 != out {
			t.Fatalf("export is not stable:\n%s\n%s", out, out2)
		}
	})
}

// TestValidateImportAmendment: an imported amendment's copies must stand
// in for steps of the working set as of the entry: one for a step a full
// record removed, or for a step not yet logged, is refused.
func TestValidateImportAmendment(t *testing.T) {
	sess := &store.Session{ID: "s", Retention: store.SessionRetention, CreatedAt: t0, UpdatedAt: t0, LastSeq: 5}
	task := func(id string, n int64) agentmem.Step {
		return store.WithNumber(&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: id}, Task: id}, n)
	}
	log := func(amended int64) []store.Entry {
		return []store.Entry{
			{Seq: 1, Kind: store.StepEntry, Step: task("a", 1), Time: t0},
			{Seq: 2, Kind: store.StepEntry, Step: task("b", 2), Time: t0},
			{Seq: 3, Kind: store.CompactionEntry, Compaction: &store.CompactionRecord{Working: []int64{2}, Removed: []int64{1}}, Time: t0},
			{Seq: 4, Kind: store.StepEntry, Step: task("c", 4), Time: t0},
			{Seq: 5, Kind: store.CompactionEntry, Compaction: &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{task(map[int64]string{1: "a", 2: "b", 4: "c", 6: "d"}[amended], amended)}}, Time: t0},
		}
	}
	for _, n := range []int64{2, 4} {
		if err := store.ValidateImport(sess, log(n)); err != nil {
			t.Errorf("an amendment of step %d of the working set: %v", n, err)
		}
	}
	for _, n := range []int64{1, 6} {
		var inv *agentmem.InvalidError
		if err := store.ValidateImport(sess, log(n)); !errors.As(err, &inv) || inv.Field != "entries[4].compaction.replaced[0].number" {
			t.Errorf("an amendment of step %d, not in the working set: %v", n, err)
		}
	}
}

// TestExportSettings: a session's settings are in its export's header and
// come back on import; an export without them (as every export made
// before sessions had settings) imports a session without them; bad ones
// are refused as the header's.
func TestExportSettings(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: fixedClock()})
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s", Pinning: &agentmem.ChatPinning,
		AutoCompact: &store.AutoCompact{MaxTokens: 8000, TargetTokens: 4000, KeepRecent: 6, Summarizer: store.SummarizerExtractive}}); err != nil {
		t.Fatal(err)
	}
	got := export(t, st, "s")
	want := `{"agentmem_export":1,"session":{"id":"s","retention":"session","created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:00:00Z","last_seq":0,` +
		`"pinning":{"system_prompts":true,"first_task":false,"tasks":false,"summary":true},"auto_compact":{"max_tokens":8000,"target_tokens":4000,"keep_recent":6,"summarizer":"extractive"}}}` + "\n"
	if got != want {
		t.Fatalf("export:\n%s\nwant\n%s", got, want)
	}
	dst := memstore.New(memstore.Options{Clock: fixedClock()})
	s, err := store.Import(ctx, dst, strings.NewReader(got), store.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Pinning == nil || *s.Pinning != agentmem.ChatPinning || s.AutoCompact == nil || s.AutoCompact.MaxTokens != 8000 {
		t.Fatalf("imported session: %+v", s)
	}
	if again := export(t, dst, "s"); again != got {
		t.Fatalf("re-export:\n%s\nwant\n%s", again, got)
	}
	old := `{"agentmem_export":1,"session":{"id":"old","retention":"session","created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:00:00Z","last_seq":0}}` + "\n"
	s, err = store.Import(ctx, dst, strings.NewReader(old), store.ImportOptions{})
	if err != nil || s.Pinning != nil || s.AutoCompact != nil {
		t.Fatalf("import of an export without settings: %+v, %v", s, err)
	}
	if p := s.EffectivePinning(); p != agentmem.DefaultPinning {
		t.Fatalf("a session without a pinning pins %+v, want the default", p)
	}
	for _, bad := range []string{
		strings.Replace(want, `"max_tokens":8000`, `"max_tokens":0`, 1),
		strings.Replace(want, `"summary":true`, `"summary":true,"everything":true`, 1),
	} {
		_, err := store.Import(ctx, memstore.New(memstore.Options{}), strings.NewReader(bad), store.ImportOptions{})
		if !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("import of bad settings %s: %v, want ErrInvalid", bad, err)
		}
	}
}
