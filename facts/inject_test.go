package facts

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/tokenizer"
)

func counter(t testing.TB) tokenizer.Counter {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hitsOf(texts ...string) []Hit {
	hs := make([]Hit, len(texts))
	for i, s := range texts {
		hs[i] = Hit{Fact: Fact{ID: fmt.Sprint("id", i), Text: s}}
	}
	return hs
}

func TestAddFactsExactAndWithinMax(t *testing.T) {
	c := counter(t)
	conv := []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Text("You are a helpful assistant.")},
		{Role: agentmem.RoleUser, Content: agentmem.Text("What should I cook tonight?")},
	}
	noSystem := conv[1:]
	hits := hitsOf("Is vegetarian.", "Is allergic to peanuts and tree nuts, severely.", "Lives in Paris.",
		strings.Repeat("Collects antique maps of the Baltic coast. ", 20), "Has a toddler.")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		msgs := conv
		if i%2 == 1 {
			msgs = noSystem
		}
		snapshot := fmt.Sprint(msgs)
		max := rng.IntN(120)
		out, shown, used := AddFacts(msgs, hits, c, max, "")
		if fmt.Sprint(msgs) != snapshot {
			t.Fatal("AddFacts modified its input")
		}
		if used > max {
			t.Fatalf("max %d: used %d", max, used)
		}
		if delta := agentmem.RequestTokens(c, out) - agentmem.RequestTokens(c, msgs); delta != used {
			t.Fatalf("max %d: reported %d tokens, the request grew by %d", max, used, delta)
		}
		if len(shown) == 0 {
			if used != 0 || len(out) != len(msgs) {
				t.Fatalf("max %d: nothing shown but %d tokens used", max, used)
			}
			continue
		}
		if out[0].Role != agentmem.RoleSystem || len(out) != 2 {
			t.Fatalf("max %d: %d messages, first %s", max, len(out), out[0].Role)
		}
		for _, h := range shown {
			if !strings.Contains(out[0].Text(), "- "+strings.Join(strings.Fields(h.Fact.Text), " ")) {
				t.Fatalf("fact %q not in the system prompt:\n%s", h.Fact.Text, out[0].Text())
			}
		}
		if i%2 == 0 && !strings.HasPrefix(out[0].Text(), "You are a helpful assistant.\n\n"+DefaultHeader) {
			t.Fatalf("the facts are not appended to the system prompt:\n%s", out[0].Text())
		}
	}
	// With room for everything but the long fact, the long one is skipped
	// and the facts after it still get in.
	_, shown, _ := AddFacts(conv, hits, c, 60, "")
	if len(shown) != 4 || shown[3].Fact.Text != "Has a toddler." {
		t.Fatalf("shown = %+v", shown)
	}
}

func TestInject(t *testing.T) {
	ctx := context.Background()
	now := t0
	mem := New(NewMemStore(), Options{Clock: func() time.Time { return now },
		Decay: Decay{HalfLife: 24 * time.Hour, Floor: 0.1}, InjectThreshold: 0.3})
	for _, s := range []string{"Is vegetarian.", "Cooks on an induction stove.", "Works as a nurse."} {
		if _, err := mem.Remember(ctx, RememberRequest{UserID: "u", Text: s, Confidence: 0.9}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(72 * time.Hour) // 0.1 + 0.8/8 = 0.2: below the threshold
	if _, err := mem.Remember(ctx, RememberRequest{UserID: "u", Text: "Cooks on an induction stove.", Confidence: 0.9}); err != nil {
		t.Fatal(err)
	}
	c := counter(t)
	msgs := []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("Which stove recipes?")}}
	out, inj, err := mem.Inject(ctx, msgs, InjectOptions{UserID: "u", Budget: 8000, Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	if len(inj.Hits) != 1 || inj.Hits[0].Fact.Text != "Cooks on an induction stove." || inj.Allowance != 800 {
		t.Fatalf("injection = %+v; want only the reinforced fact (the others decayed below the threshold)", inj)
	}
	if got := agentmem.RequestTokens(c, out) - agentmem.RequestTokens(c, msgs); got != inj.Tokens || out[0].Role != agentmem.RoleSystem {
		t.Fatalf("tokens %d, reported %d", got, inj.Tokens)
	}
	// The whole request never exceeds the budget.
	big := []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text(strings.Repeat("stove ", 190))}}
	budget := agentmem.RequestTokens(c, big) + 5
	out, inj, err = mem.Inject(ctx, big, InjectOptions{UserID: "u", Budget: budget, Share: 0.5, Counter: c})
	if err != nil || inj.Allowance != 5 || len(inj.Hits) != 0 || len(out) != 1 {
		t.Fatalf("near the budget: %+v, %v", inj, err)
	}
	if _, _, err := mem.Inject(ctx, msgs, InjectOptions{UserID: "u", Budget: 8000}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("no counter: %v", err)
	}
}

// TestWrapEndToEnd runs two turns of an agent whose model and fact
// extractor are both served by a local OpenAI-compatible endpoint: the
// fact learnt in the first turn is in the system prompt of the second.
func TestWrapEndToEnd(t *testing.T) {
	ctx := context.Background()
	mem := New(NewMemStore(), Options{Clock: func() time.Time { return t0 }})
	var agentPrompts []string
	client, _ := newChatServer(t, func(_ int, req chatRequest) (int, string) {
		if strings.HasPrefix(req.Messages[0].Content.String(), "You maintain long-term memory") {
			_, turn := extractionInput(t, req)
			if strings.Contains(turn[0].Content, "vegetarian") {
				return http.StatusOK, `{"decisions":[{"action":"add","text":"Is vegetarian.","confidence":0.9}]}`
			}
			return http.StatusOK, `{"decisions":[{"action":"ignore"}]}`
		}
		agentPrompts = append(agentPrompts, req.Messages[0].Content.String())
		return http.StatusOK, "Here is an idea."
	})
	model := func(ctx context.Context, msgs []agentmem.Message) (agentmem.Message, error) {
		wire := make([]llm.Message, len(msgs))
		for i, m := range msgs {
			wire[i] = llm.Message{Role: string(m.Role), Content: llm.TextContent(m.Text())}
		}
		resp, err := client.Chat(ctx, llm.ChatRequest{Messages: wire})
		if err != nil {
			return agentmem.Message{}, err
		}
		return agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text(resp.Message.Content.String())}, nil
	}
	var errs []error
	var injected []Injection
	call := mem.Wrap(model, WrapOptions{
		UserID: "alice", Source: Source{SessionID: "s1", Agent: "chef"},
		Extractor: &LLMExtractor{Client: client},
		Inject:    InjectOptions{Budget: 8000, Counter: counter(t)},
		OnError:   func(err error) { errs = append(errs, err) },
		OnTurn:    func(inj Injection, _ *Extraction) { injected = append(injected, inj) },
	})
	system := agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("You are a cooking assistant.")}
	msgs := []agentmem.Message{system, {Role: agentmem.RoleUser, Content: agentmem.Text("Hi! I'm vegetarian, by the way.")}}
	reply, err := call(ctx, msgs)
	if err != nil || reply.Text() != "Here is an idea." {
		t.Fatalf("turn 1 = %v, %v", reply, err)
	}
	// The turn is learnt from in the background: the next one sees its
	// facts once it is done.
	if err := mem.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, reply, agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("What should I cook tonight?")})
	if _, err := call(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	if err := mem.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(agentPrompts) != 2 || strings.Contains(agentPrompts[0], "vegetarian") || !strings.Contains(agentPrompts[1], "- Is vegetarian.") {
		t.Fatalf("system prompts seen by the model:\n%q", agentPrompts)
	}
	if len(injected) != 2 || len(injected[1].Hits) != 1 || injected[1].Tokens > 800 || injected[1].Tokens <= 0 {
		t.Fatalf("injections = %+v", injected)
	}
	fs, _ := mem.List(ctx, "", "alice", false)
	if len(fs) != 1 || fs[0].Source.Agent != "chef" {
		t.Fatalf("facts = %+v", fs)
	}
}

// TestWrapKeepsTheTurn checks that a failing extraction never costs the
// caller the model's reply.
func TestWrapKeepsTheTurn(t *testing.T) {
	mem := New(NewMemStore(), Options{})
	failing := ExtractorFunc(func(context.Context, ExtractRequest) ([]Decision, error) {
		return nil, &ExtractionError{Attempts: 2, Err: errors.New("malformed twice")}
	})
	var got []error
	call := mem.Wrap(func(context.Context, []agentmem.Message) (agentmem.Message, error) {
		return agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text("ok")}, nil
	}, WrapOptions{UserID: "u", Extractor: failing, NoInject: true, OnError: func(err error) { got = append(got, err) }})
	reply, err := call(context.Background(), []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("hello")}})
	if err != nil || reply.Text() != "ok" {
		t.Fatalf("reply %v, %v", reply, err)
	}
	if err := mem.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !errors.Is(got[0], ErrExtraction) {
		t.Fatalf("OnError got %v", got)
	}
}

// TestWrapDoesNotWaitForExtraction: the reply is returned while the
// turn's extraction is still running; Flush waits for it (or for its
// context), and the turns of one wrapped function are extracted in order.
func TestWrapDoesNotWaitForExtraction(t *testing.T) {
	ctx := context.Background()
	mem := New(NewMemStore(), Options{})
	release := make(chan struct{})
	var (
		mu   sync.Mutex
		seen []string
	)
	slow := ExtractorFunc(func(_ context.Context, req ExtractRequest) ([]Decision, error) {
		<-release
		text := req.Messages[0].Text()
		mu.Lock()
		seen = append(seen, text)
		mu.Unlock()
		return []Decision{{Op: OpAdd, Text: text}}, nil
	})
	var turns atomic.Int32
	call := mem.Wrap(func(context.Context, []agentmem.Message) (agentmem.Message, error) {
		return agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text("ok")}, nil
	}, WrapOptions{UserID: "u", Extractor: slow, NoInject: true, OnTurn: func(_ Injection, ex *Extraction) {
		if ex != nil {
			turns.Add(1)
		}
	}})
	// The caller's context ends with its call; the extraction goes on.
	cctx, cancel := context.WithCancel(ctx)
	for _, text := range []string{"Likes green apples.", "Owns a red bicycle.", "Speaks fluent Japanese."} {
		if reply, err := call(cctx, []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text(text)}}); err != nil || reply.Text() != "ok" {
			t.Fatalf("reply %v, %v", reply, err)
		}
	}
	cancel()
	if fs, _ := mem.List(ctx, "", "u", false); len(fs) != 0 {
		t.Fatalf("facts before the extractions ran: %+v", fs)
	}
	short, stop := context.WithTimeout(ctx, 10*time.Millisecond)
	defer stop()
	if err := mem.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush while extractions wait: %v", err)
	}
	close(release)
	if err := mem.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := turns.Load(); n != 3 {
		t.Errorf("OnTurn saw %d extractions, want 3", n)
	}
	if want := []string{"Likes green apples.", "Owns a red bicycle.", "Speaks fluent Japanese."}; !slices.Equal(seen, want) {
		t.Errorf("extracted %q, want %q in order", seen, want)
	}
	if fs, _ := mem.List(ctx, "", "u", false); len(fs) != 3 {
		t.Errorf("facts after Flush: %+v", fs)
	}
}
