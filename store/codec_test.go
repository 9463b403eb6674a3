package store_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

// codecSteps are steps whose first encoding is not what decoding and
// encoding again would give if the codec were not stable: local time
// zones, a monotonic clock reading, structured data with spaces, HTML
// characters.
func codecSteps() []agentmem.Step {
	local := time.Date(2026, 7, 8, 9, 10, 11, 12, time.FixedZone("XYZ", -5*3600))
	return []agentmem.Step{
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 1, ID: "t", Time: time.Now()}, Task: "<b>&</b> \u2028", Images: []agentmem.Image{{Data: []byte{0, 1, 2, 255}}}},
		&agentmem.MessageStep{StepInfo: agentmem.StepInfo{Number: 2, ID: "m", Time: local}, Message: agentmem.Message{
			Role: agentmem.RoleAgentResponse, Content: agentmem.Content{agentmem.TextPart("a"), agentmem.TextPart("b")},
			Data: []byte(` { "k" : [1, 2.50, "<x>"] } `), Time: local,
		}},
		&agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 3, ID: "a", Metadata: map[string]string{"z": "1", "a": "2"}},
			ToolCalls: []agentmem.ToolCall{{ID: "c", Name: "f", Arguments: `{"x": 1}`}}, Results: []agentmem.ToolResult{{CallID: "c", Content: "ok", IsError: true}},
			Duration: time.Second, Usage: &agentmem.Usage{}},
		&agentmem.SummaryStep{StepInfo: agentmem.StepInfo{Number: 4, ID: "s"}, Summary: "s", Covers: []agentmem.Range{}},
		&agentmem.SummaryStep{StepInfo: agentmem.StepInfo{Number: 5, ID: "s2"}, Summary: "s"},
	}
}

func TestCodecStable(t *testing.T) {
	for _, s := range codecSteps() {
		n, b, err := storekit.Normalize(s, int64(s.Info().Number))
		if err != nil {
			t.Fatalf("Normalize(%s): %v", s.Kind(), err)
		}
		again, err := store.EncodeStep(n)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("%s: encoding is not stable:\n%s\n%s", s.Kind(), b, again)
		}
	}
}

func TestCompactionCodec(t *testing.T) {
	copy5 := store.WithNumber(&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "x"}, Task: "short"}, 5)
	c := &store.CompactionRecord{Working: []int64{1, 6, 5}, Replaced: []agentmem.Step{copy5}, Removed: []int64{2, 3}}
	b, err := store.EncodeCompaction(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"working":[1,6,5],"replaced":[{"type":"task","number":5,"id":"x","task":"short"}],"removed":[2,3]}`
	if string(b) != want {
		t.Fatalf("EncodeCompaction = %s\nwant %s", b, want)
	}
	d, err := store.DecodeCompaction(b)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := store.EncodeCompaction(d); !bytes.Equal(again, b) {
		t.Fatalf("round trip: %s", again)
	}
	if empty, _ := store.EncodeCompaction(&store.CompactionRecord{}); string(empty) != `{"working":[]}` {
		t.Fatalf("empty record: %s", empty)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{"working":[1],"extra":1}`, `{"working":[1]} {}`, `{"working":[0]}`, `{"working":[-1]}`,
		`{"working":[1],"replaced":[{"type":"task","number":2,"id":"x","task":"t"}]}`,
		`{"working":[1],"replaced":[{"type":"nope","number":1}]}`, "{\"working\":[1],\"removed\":[2],\"x\xff\":1}",
		// The working set is required: leaving it out is no way to clear it.
		`{}`, `{"removed":[1]}`, `{"working":null,"removed":[1]}`,
	} {
		if _, err := store.DecodeCompaction([]byte(bad)); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("DecodeCompaction(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := store.EncodeCompaction(nil); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatal("EncodeCompaction(nil)")
	}
	// Working is required, and member names are matched exactly.
	for bad, field := range map[string]string{
		`{"removed":[1]}`:                "compaction.working",
		`{"working":null,"removed":[1]}`: "compaction.working",
		`{"Working":[1]}`:                "compaction.Working",
		`{"working":[1],"Removed":[2]}`:  "compaction.Removed",
	} {
		var inv *agentmem.InvalidError
		if _, err := store.DecodeAppendCompaction([]byte(bad), 1); !errors.As(err, &inv) || inv.Field != field {
			t.Errorf("DecodeAppendCompaction(%s) = %v, want an invalid %s", bad, err, field)
		}
	}
	if c, err := store.DecodeAppendCompaction([]byte(`{"working":[]}`), 0); err != nil || c.Working == nil || len(c.Working) != 0 {
		t.Errorf("an empty working set: %+v, %v", c, err)
	}
}

// TestAmendmentCodec: an amendment encodes without a working list, begins
// with AmendPrefix (a full record never does), round-trips, and is
// refused with a working or removed list, or without copies.
func TestAmendmentCodec(t *testing.T) {
	copy5 := store.WithNumber(&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "x"}, Task: "done"}, 5)
	c := &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{copy5}}
	b, err := store.EncodeCompaction(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"amend":true,"replaced":[{"type":"task","number":5,"id":"x","task":"done"}]}`
	if string(b) != want || !bytes.HasPrefix(b, []byte(store.AmendPrefix)) {
		t.Fatalf("EncodeCompaction = %s\nwant %s", b, want)
	}
	d, err := store.DecodeCompaction(b)
	if err != nil || !d.Amend || d.Working != nil || len(d.Replaced) != 1 {
		t.Fatalf("DecodeCompaction = %+v, %v", d, err)
	}
	if again, _ := store.EncodeCompaction(d); !bytes.Equal(again, b) {
		t.Fatalf("round trip: %s", again)
	}
	if again, _ := store.EncodeCompaction(d.Clone()); !bytes.Equal(again, b) {
		t.Fatalf("Clone loses the form: %s", again)
	}
	for _, full := range []*store.CompactionRecord{{}, {Working: []int64{1}, Replaced: []agentmem.Step{store.WithNumber(copy5, 1)}}} {
		if b, _ := store.EncodeCompaction(full); bytes.HasPrefix(b, []byte(store.AmendPrefix)) {
			t.Fatalf("a full record begins with AmendPrefix: %s", b)
		}
	}
	// amend:false is a full record.
	if d, err := store.DecodeCompaction([]byte(`{"amend":false,"working":[1]}`)); err != nil || d.Amend {
		t.Fatalf("amend false: %+v, %v", d, err)
	}
	for bad, field := range map[string]string{
		`{"amend":true,"working":[5],"replaced":[{"type":"task","number":5,"id":"x","task":"t"}]}`: "compaction.working",
		`{"amend":true,"working":[],"replaced":[{"type":"task","number":5,"id":"x","task":"t"}]}`:  "compaction.working",
		`{"amend":true,"removed":[4],"replaced":[{"type":"task","number":5,"id":"x","task":"t"}]}`: "compaction.removed",
		`{"amend":true}`:               "compaction.replaced",
		`{"amend":true,"replaced":[]}`: "compaction.replaced",
		`{"amend":true,"replaced":[{"type":"task","number":0,"id":"x","task":"t"}]}`:                                                "compaction.replaced[0].number",
		`{"amend":true,"replaced":[{"type":"task","number":5,"id":"x","task":"t"},{"type":"task","number":5,"id":"x","task":"u"}]}`: "compaction.replaced[1].number",
		`{"amend":true,"replaced":[{"type":"task","number":5,"task":"t"}]}`:                                                         "compaction.replaced[0].id",
		`{"Amend":true,"replaced":[{"type":"task","number":5,"id":"x","task":"t"}]}`:                                                "compaction.Amend",
	} {
		var inv *agentmem.InvalidError
		if _, err := store.DecodeAppendCompaction([]byte(bad), 1); !errors.As(err, &inv) || inv.Field != field {
			t.Errorf("DecodeAppendCompaction(%s) = %v, want an invalid %s", bad, err, field)
		}
	}
	if _, err := store.EncodeCompaction(&store.CompactionRecord{Amend: true, Working: []int64{5}, Replaced: []agentmem.Step{copy5}}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("an amendment with a working list encodes: %v", err)
	}
}

// FuzzDecodeStep checks that DecodeStep refuses bad input with ErrInvalid
// and never panics, and that what it accepts encodes stably.
func FuzzDecodeStep(f *testing.F) {
	for _, s := range codecSteps() {
		b, _ := store.EncodeStep(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := store.DecodeStep(data)
		if err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("DecodeStep error %v does not wrap ErrInvalid", err)
			}
			return
		}
		b, err := store.EncodeStep(s)
		if err != nil {
			// Only a time outside what JSON can hold gets here.
			return
		}
		s2, err := store.DecodeStep(b)
		if err != nil {
			t.Fatalf("DecodeStep(EncodeStep(x)) failed: %v\n%s", err, b)
		}
		b2, err := store.EncodeStep(s2)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", b, b2)
		}
	})
}

// FuzzDecodeCompaction is FuzzDecodeStep for compaction records.
func FuzzDecodeCompaction(f *testing.F) {
	f.Add([]byte(`{"working":[1,6,5],"replaced":[{"type":"task","number":5,"id":"x","task":"short"}],"removed":[2,3]}`))
	f.Add([]byte(`{"amend":true,"replaced":[{"type":"task","number":5,"id":"x","task":"done"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := store.DecodeCompaction(data)
		if err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("DecodeCompaction error %v does not wrap ErrInvalid", err)
			}
			return
		}
		b, err := store.EncodeCompaction(c)
		if err != nil {
			return
		}
		c2, err := store.DecodeCompaction(b)
		if err != nil {
			t.Fatalf("DecodeCompaction(EncodeCompaction(x)) failed: %v\n%s", err, b)
		}
		if b2, err := store.EncodeCompaction(c2); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", b, b2)
		}
		// Only an amendment's encoding begins with AmendPrefix, which
		// the database backends look for.
		if bytes.HasPrefix(b, []byte(store.AmendPrefix)) != c.Amend {
			t.Fatalf("amend %v, encoding %s", c.Amend, b)
		}
	})
}

func TestEncodedKind(t *testing.T) {
	for _, s := range codecSteps() {
		b, err := store.EncodeStep(s)
		if err != nil {
			t.Fatal(err)
		}
		// The start of the encoding is enough.
		if k, err := storekit.EncodedKind(b[:min(len(b), storekit.KindPrefixBytes)]); err != nil || k != s.Kind() {
			t.Errorf("EncodedKind(prefix of %s) = %q, %v", s.Kind(), k, err)
		}
	}
	// Another field order is decoded whole.
	if k, err := storekit.EncodedKind([]byte(`{"number":1,"id":"x","type":"task","task":"t"}`)); err != nil || k != agentmem.KindTask {
		t.Errorf("EncodedKind of a step not starting with its type: %q, %v", k, err)
	}
	for _, bad := range []string{`{"type":"nope","number":1}`, `{"number":1,"type":"nope"}`, `{"type":"`, ``} {
		if _, err := storekit.EncodedKind([]byte(bad)); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("EncodedKind(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

// A decoded step or compaction record keeps nothing of the bytes it was
// decoded from: the database backends decode from the driver's buffer,
// which the next row overwrites.
func TestDecodeCopies(t *testing.T) {
	steps := codecSteps()
	steps = append(steps,
		&agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 6, ID: "a6", Metadata: map[string]string{"k": "v"}},
			Thought: "think", ModelOutput: "out", ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "grep", Arguments: `{"q":"x"}`}},
			Results:     []agentmem.ToolResult{{CallID: "c1", Content: "found", Metadata: map[string]string{"m": "n"}, Images: []agentmem.Image{{URL: "https://example.com/a.png", Detail: "low"}}}},
			Observation: "seen", Error: "none", Data: []byte(`{"d":[1,"two"]}`), Images: []agentmem.Image{{Data: []byte("png")}}},
		&agentmem.MessageStep{StepInfo: agentmem.StepInfo{Number: 7, ID: "m7"}, Message: agentmem.Message{Role: agentmem.RoleAssistant, Name: "bot",
			Content:    agentmem.Content{agentmem.TextPart("a"), agentmem.ImagePart(agentmem.Image{URL: "https://example.com/b.png"})},
			AgentCalls: []agentmem.AgentCall{{ID: "x", Agent: "y", Request: "z"}},
			Metadata:   map[string]string{"a": "b"}}},
	)
	scribble := func(b []byte) {
		for i := range b {
			b[i] = 'x'
		}
	}
	for _, s := range steps {
		_, want, err := storekit.Normalize(s, int64(s.Info().Number))
		if err != nil {
			t.Fatalf("Normalize(%s): %v", s.Kind(), err)
		}
		buf := bytes.Clone(want)
		d, err := store.DecodeStep(buf)
		if err != nil {
			t.Fatalf("DecodeStep(%s): %v", want, err)
		}
		scribble(buf)
		if got, _ := store.EncodeStep(d); !bytes.Equal(got, want) {
			t.Fatalf("step changed with the bytes it was decoded from:\n%s\nwant\n%s", got, want)
		}
	}
	c := &store.CompactionRecord{Working: []int64{1, 7}, Replaced: []agentmem.Step{steps[len(steps)-1]}, Removed: []int64{2}}
	want, err := store.EncodeCompaction(c)
	if err != nil {
		t.Fatal(err)
	}
	buf := bytes.Clone(want)
	d, err := store.DecodeCompaction(buf)
	if err != nil {
		t.Fatal(err)
	}
	scribble(buf)
	if got, _ := store.EncodeCompaction(d); !bytes.Equal(got, want) {
		t.Fatalf("compaction changed with the bytes it was decoded from:\n%s\nwant\n%s", got, want)
	}
}
