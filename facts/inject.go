package facts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/textcut"
	"github.com/agentmem/agentmem/tokenizer"
)

// DefaultShare is the share of the token budget that Inject gives facts
// when InjectOptions.Share is 0: 800 tokens of an 8,000-token budget.
const DefaultShare = 0.10

// DefaultHeader introduces the facts block in the system prompt.
const DefaultHeader = "Known facts about the user (from earlier conversations; they may be out of date):"

// InjectOptions configures Memory.Inject.
type InjectOptions struct {
	Tenant string
	UserID string
	// Query selects the relevant facts; empty means the text of the last
	// user message.
	Query string
	// K is the most facts injected; 0 means DefaultK.
	K int
	// RelevantOnly injects only facts that match the query. By default
	// the K slots are completed with the user's most confident facts, so
	// that "is vegetarian" reaches "what should I cook?".
	RelevantOnly bool
	// Budget is the token budget of the whole request, as given to
	// agentmem.Memory.Context; zero means no budget, and then MaxTokens is
	// required.
	Budget int
	// Share is the part of Budget the facts may use; 0 means
	// DefaultShare.
	Share float64
	// MaxTokens, when positive, caps the facts' tokens instead of
	// Share × Budget.
	MaxTokens int
	// Counter counts tokens; required. Use the counter the messages were
	// fitted with.
	Counter tokenizer.Counter
	// Header introduces the block; empty means DefaultHeader.
	Header string
}

// Injection reports what Inject added.
type Injection struct {
	// Hits are the facts injected, in the order shown.
	Hits []Hit `json:"hits"`
	// Tokens is what the injection added to the request's cost
	// (agentmem.RequestTokens), never more than the allowance.
	Tokens int `json:"tokens"`
	// Allowance is the most it could add.
	Allowance int `json:"allowance"`
}

// Inject returns msgs (typically agentmem.Memory.Context's Messages) with
// the user's most relevant facts added to the system prompt: the top K by
// relevance × confidence, among facts whose effective confidence reaches
// Options.InjectThreshold, as many as fit in the allowance. The allowance
// is MaxTokens, or Share × Budget; with a Budget it is also capped so that
// the request stays within Budget. msgs is not modified.
func (m *Memory) Inject(ctx context.Context, msgs []agentmem.Message, opts InjectOptions) ([]agentmem.Message, Injection, error) {
	if opts.Counter == nil {
		return msgs, Injection{}, &agentmem.InvalidError{Field: "counter", Reason: "is required to count the facts' tokens"}
	}
	allowance := opts.MaxTokens
	if allowance <= 0 {
		if opts.Budget <= 0 {
			return msgs, Injection{}, &agentmem.InvalidError{Field: "budget", Reason: "a Budget or MaxTokens is required"}
		}
		share := opts.Share
		if share <= 0 || share > 1 {
			share = DefaultShare
		}
		allowance = int(float64(opts.Budget) * share)
	}
	if opts.Budget > 0 {
		allowance = min(allowance, opts.Budget-agentmem.RequestTokens(opts.Counter, msgs))
	}
	inj := Injection{Allowance: max(allowance, 0)}
	if allowance <= 0 {
		return msgs, inj, nil
	}
	query := opts.Query
	if query == "" {
		query = lastUserText(msgs)
	}
	hits, err := m.Search(ctx, SearchRequest{
		Tenant: opts.Tenant, UserID: opts.UserID, Query: textcut.Prefix(query, MaxTextBytes*8),
		K: opts.K, MinConfidence: m.opts.InjectThreshold, Fill: !opts.RelevantOnly,
	})
	if err != nil {
		return msgs, inj, err
	}
	out, shown, used := AddFacts(msgs, hits, opts.Counter, allowance, opts.Header)
	inj.Hits, inj.Tokens = shown, used
	return out, inj, nil
}

// lastUserText returns the text of the last user message.
func lastUserText(msgs []agentmem.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == agentmem.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

// AddFacts returns msgs with a block listing the hits' facts appended to
// the first message if it is a system message, or put first as a new
// system message. Hits are taken in order; one that would take the block
// past maxTokens (the added cost, under agentmem's exact message cost
// model with counter c) is skipped. It returns the new messages, the hits
// shown and the tokens added. With no hit shown, msgs is returned as it
// is. msgs is never modified.
func AddFacts(msgs []agentmem.Message, hits []Hit, c tokenizer.Counter, maxTokens int, header string) ([]agentmem.Message, []Hit, int) {
	if header == "" {
		header = DefaultHeader
	}
	hasSystem := len(msgs) > 0 && msgs[0].Role == agentmem.RoleSystem
	before := 0
	if hasSystem {
		before = agentmem.MessageTokens(c, msgs[0])
	}
	// cost returns the system message with the block and what it adds.
	cost := func(lines []string) (agentmem.Message, int) {
		block := header + "\n" + strings.Join(lines, "\n")
		if !hasSystem {
			sys := agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text(block)}
			return sys, agentmem.MessageTokens(c, sys)
		}
		sys := msgs[0].Clone()
		if n := len(sys.Content); n > 0 && sys.Content[n-1].Type == agentmem.PartText {
			sys.Content[n-1].Text += "\n\n" + block
		} else {
			sys.Content = append(sys.Content, agentmem.TextPart(block))
		}
		return sys, agentmem.MessageTokens(c, sys) - before
	}
	var (
		lines []string
		shown []Hit
		best  agentmem.Message
		used  int
	)
	for _, h := range hits {
		line := "- " + strings.Join(strings.Fields(h.Fact.Text), " ")
		sys, n := cost(append(lines, line))
		if n > maxTokens {
			continue
		}
		lines, shown, best, used = append(lines, line), append(shown, h), sys, n
	}
	if len(shown) == 0 {
		return msgs, nil, 0
	}
	out := make([]agentmem.Message, 0, len(msgs)+1)
	if hasSystem {
		out = append(out, best)
		out = append(out, msgs[1:]...)
	} else {
		out = append(out, best)
		out = append(out, msgs...)
	}
	return out, shown, used
}

// ModelFunc calls a model with messages and returns its reply.
type ModelFunc func(ctx context.Context, msgs []agentmem.Message) (agentmem.Message, error)

// WrapOptions configures Wrap: the seeds' @remember(extract, inject,
// top_k).
type WrapOptions struct {
	Tenant string
	UserID string
	// Source is recorded on extracted facts.
	Source Source
	// Extractor learns from each turn after the model answers, in the
	// background; nil means no extraction.
	Extractor Extractor
	// NoInject turns injection off.
	NoInject bool
	// Inject configures injection; its Tenant and UserID are taken from
	// above. Counter and a Budget or MaxTokens are required unless
	// NoInject is set.
	Inject InjectOptions
	// OnError receives the errors of injection and extraction, which
	// never fail the call: an *ExtractionError, a store error. Nil
	// drops them. Extraction errors arrive from the background, after
	// the call returned.
	OnError func(error)
	// OnTurn, when set, receives what each turn injected and extracted
	// (the Extraction is nil when extraction is off or failed): with an
	// Extractor, from the background once the turn's extraction is done.
	OnTurn func(Injection, *Extraction)
}

// Wrap returns a ModelFunc that runs next with the user's relevant facts
// injected into the system prompt, then learns from the turn: the user
// messages that follow the last assistant message of the input, and the
// reply. The reply is returned as soon as next returns. Extraction, a
// model call of its own with LLMExtractor, runs in the background, with
// the call's context values but not its cancellation. The turns of one
// wrapped function are extracted one at a time, in the order of the
// calls, so their OnError and OnTurn are never called concurrently. A call
// made before the previous turn's extraction is done does not see its
// facts: Flush waits for them. Extractions still running when the
// process exits are lost (their turns are not learnt from): call Flush
// before exiting. Failures to inject or extract go to OnError; the
// model's reply is always returned.
func (m *Memory) Wrap(next ModelFunc, opts WrapOptions) ModelFunc {
	report := func(err error) {
		if err != nil && opts.OnError != nil {
			opts.OnError(err)
		}
	}
	var (
		mu   sync.Mutex
		last chan struct{} // closed when the latest turn's extraction is done
	)
	return func(ctx context.Context, msgs []agentmem.Message) (agentmem.Message, error) {
		var inj Injection
		in := msgs
		if !opts.NoInject {
			iopts := opts.Inject
			iopts.Tenant, iopts.UserID = opts.Tenant, opts.UserID
			out, got, err := m.Inject(ctx, msgs, iopts)
			report(err)
			if err == nil {
				in, inj = out, got
			}
		}
		reply, err := next(ctx, in)
		if err != nil {
			return reply, err
		}
		if opts.Extractor == nil {
			if opts.OnTurn != nil {
				opts.OnTurn(inj, nil)
			}
			return reply, nil
		}
		turn := Turn{Tenant: opts.Tenant, UserID: opts.UserID, Messages: append(lastTurn(msgs), reply), Source: opts.Source}
		mu.Lock()
		prev, done := last, make(chan struct{})
		last = done
		mu.Unlock()
		m.bg.add()
		go func() {
			defer m.bg.done()
			defer close(done)
			if prev != nil {
				<-prev
			}
			ex, err := m.Extract(context.WithoutCancel(ctx), opts.Extractor, turn)
			if err != nil {
				report(err)
				ex = nil
			}
			if opts.OnTurn != nil {
				opts.OnTurn(inj, ex)
			}
		}()
		return reply, nil
	}
}

// Flush waits until the extractions that Wrap runs in the background,
// of every function it wrapped for m, are done (their facts stored, their
// OnError and OnTurn called), or ctx ends. Call it before exiting, so that
// no turn goes unlearnt, and in tests before looking at the facts.
func (m *Memory) Flush(ctx context.Context) error {
	return m.bg.wait(ctx)
}

// background counts the extractions running in the background.
type background struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n is 0
}

func newBackground() *background {
	idle := make(chan struct{})
	close(idle)
	return &background{idle: idle}
}

func (b *background) add() {
	b.mu.Lock()
	if b.n == 0 {
		b.idle = make(chan struct{})
	}
	b.n++
	b.mu.Unlock()
}

func (b *background) done() {
	b.mu.Lock()
	if b.n--; b.n == 0 {
		close(b.idle)
	}
	b.mu.Unlock()
}

// wait waits until n is 0, or ctx ends.
func (b *background) wait(ctx context.Context) error {
	for {
		b.mu.Lock()
		n, idle := b.n, b.idle
		b.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("facts: waiting for the extractions in the background: %w", ctx.Err())
		}
	}
}

// lastTurn returns the user messages after the last assistant message.
func lastTurn(msgs []agentmem.Message) []agentmem.Message {
	var out []agentmem.Message
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != agentmem.RoleAssistant; i-- {
		if msgs[i].Role == agentmem.RoleUser {
			out = append(out, msgs[i])
		}
	}
	slices.Reverse(out)
	return out
}
