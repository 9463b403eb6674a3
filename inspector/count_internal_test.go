package inspector

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

// recordingCounter counts as its Counter does and adds up the bytes of the
// texts it is given.
type recordingCounter struct {
	tokenizer.Counter
	mu    sync.Mutex
	bytes int
}

func (r *recordingCounter) Count(text string) int {
	r.mu.Lock()
	r.bytes += len(text)
	r.mu.Unlock()
	return r.Counter.Count(text)
}

// messagesText is the text of messages: what MessageTokens counts.
func messagesText(msgs []agentmem.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Name)
		for _, p := range m.Content {
			n += len(p.Text)
			if p.ToolCall != nil {
				n += len(p.ToolCall.Name) + len(p.ToolCall.Arguments)
			}
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
		n += len(m.Data)
	}
	return n
}

// TestSizeChartCountsEachTextOnce draws the chart of a log of 300
// actions: it fits the context before each of 60 of them, but tokenizes
// the text of the log once, not once for each call before which it is
// sent.
func TestSizeChartCountsEachTextOnce(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	svc, err := sessions.New(sessions.Config{Store: st, CacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	steps := []agentmem.Step{&agentmem.SystemPromptStep{Content: "You are an agent."}, &agentmem.TaskStep{Task: "Read the files."}}
	for i := range 300 {
		call := fmt.Sprintf("call_%d", i)
		steps = append(steps, &agentmem.ActionStep{
			ModelOutput: fmt.Sprintf("Reading file %d.", i),
			ToolCalls:   []agentmem.ToolCall{{ID: call, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, i)}},
			Results:     []agentmem.ToolResult{{CallID: call, Content: strings.Repeat(fmt.Sprintf("line of file %d\n", i), 200)}},
		})
	}
	for i, s := range steps {
		steps[i] = agentmem.WithInfo(s, agentmem.StepInfo{ID: fmt.Sprint(i)})
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: steps}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Read(ctx, store.ReadRequest{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := render.ByName(render.NameOpenAI)
	text := 0
	for _, e := range resp.Entries {
		text += messagesText(f.StepMessages(e.Step, agentmem.RenderOptions{}))
	}
	c, _ := tokenizer.Get(tokenizer.O200kBase)
	rec := &recordingCounter{Counter: c}
	v := view{Format: render.NameOpenAI, Tokenizer: tokenizer.O200kBase}
	chart, err := newSizeChart(ctx, svc, resp.Session, resp.Entries, v, sessions.DefaultMaxContextTokens, rec, func(int64) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if chart == nil || chart.Drawn != MaxChartCalls {
		t.Fatalf("the chart draws %v calls, want %d", chart, MaxChartCalls)
	}
	if rec.bytes > text {
		t.Errorf("the chart tokenized %d bytes for a log of %d bytes of text (%.1f times)", rec.bytes, text, float64(rec.bytes)/float64(text))
	}
}

// plain is the text of t as shown, without its marks.
func plain(t shownText) string {
	var b strings.Builder
	for _, s := range t.Segs {
		b.WriteString(s.Text)
	}
	return b.String()
}

// TestClip cuts texts to what a page shows: the text whole when it is
// short, each long word cut with the number of bytes left out, the text
// cut at the limit with the rest counted, at rune boundaries, and never
// reading far past what it shows.
func TestClip(t *testing.T) {
	long := strings.Repeat("é", MaxShownWord) // 2 bytes a rune
	for _, tc := range []struct {
		name, text string
		limit      int
		want       string // the segments, each cut word marked [+N], then +More
	}{
		{"short", "read the file\n", 100, "read the file\n"},
		{"empty", "", 100, ""},
		{"long word", "a " + strings.Repeat("x", 1000) + " b", 10_000, "a " + strings.Repeat("x", MaxShownWord) + "[+800] b"},
		{"long word of two-byte runes", long + " end", 10_000, long[:MaxShownWord] + "[+200] end"},
		{"two long words", strings.Repeat("y", 300) + "\n" + strings.Repeat("z", 201), 10_000, strings.Repeat("y", MaxShownWord) + "[+100]\n" + strings.Repeat("z", MaxShownWord) + "[+1]"},
		{"limit", "one two three four", 7, "one two+11"},
		{"limit in a rune", "ab" + long, 5, "abé+" + fmt.Sprint(len(long)-2)},
		{"limit in a cut word", "ab " + strings.Repeat("x", 500) + " more", 100, "ab " + strings.Repeat("x", 97) + "+" + fmt.Sprint(500-97+5)},
		{"a word past what clip reads", "ab " + strings.Repeat("x", clipScan*MaxShownText) + " more", MaxShownText, "ab " + strings.Repeat("x", MaxShownWord) + "+" + fmt.Sprint(clipScan*MaxShownText-MaxShownWord+5)},
		{"nothing left", "text", 0, "+4"},
	} {
		got := clip(tc.text, tc.limit)
		var b strings.Builder
		for _, s := range got.Segs {
			b.WriteString(s.Text)
			if s.Cut > 0 {
				fmt.Fprintf(&b, "[+%d]", s.Cut)
			}
		}
		if got.More > 0 {
			fmt.Fprintf(&b, "+%d", got.More)
		}
		if b.String() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, b.String(), tc.want)
		}
		shown := 0
		for _, s := range got.Segs {
			shown += len(s.Text) + s.Cut
		}
		if shown+got.More != len(tc.text) || got.Len() > max(tc.limit, 0) {
			t.Errorf("%s: %d bytes shown or cut and %d more, of %d; %d shown, limit %d", tc.name, shown, got.More, len(tc.text), got.Len(), tc.limit)
		}
	}
}

// TestHighlightShown marks the matching words of a clipped text, keeping
// the marks of its cut words.
func TestHighlightShown(t *testing.T) {
	text := "migration " + strings.Repeat("x", 1000) + " migrating done"
	got := highlightShown(clip(text, MaxShownText), map[string]bool{"migrat": true})
	var b strings.Builder
	for _, s := range got.Segs {
		if s.Mark {
			b.WriteString("[" + s.Text + "]")
		} else {
			b.WriteString(s.Text)
		}
		if s.Cut > 0 {
			fmt.Fprintf(&b, "{+%d}", s.Cut)
		}
	}
	if want := "[migration] " + strings.Repeat("x", MaxShownWord) + "{+800} [migrating] done"; b.String() != want {
		t.Errorf("got %q", b.String())
	}
}
