package sessions

import (
	"context"
	"math"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/tokenizer"
)

// Facts is where Context finds a user's facts to add to a context;
// *facts.Memory is one.
type Facts interface {
	Inject(ctx context.Context, msgs []agentmem.Message, opts facts.InjectOptions) ([]agentmem.Message, facts.Injection, error)
}

// Recall is where Context finds turns of other sessions to add to a
// context; *recall.Index is one.
type Recall interface {
	Search(ctx context.Context, q recall.Query) ([]recall.Hit, error)
}

// FactsRequest asks Context to add up to K of the session user's facts
// to the context's system prompt (facts.Memory.Inject).
type FactsRequest struct {
	// K is the most facts shown.
	K int
	// Query selects them; empty means the text of the context's last user
	// message.
	Query string
	// Share is the share of the budget kept for them, taken off what the
	// steps may cost; 0 means facts.DefaultShare. Without a budget every
	// fact found is shown.
	Share float64
}

// RecallRequest asks Context to add up to K turns of the tenant's other
// sessions (of the session's user, when it has one) relevant to Query to
// the context's system prompt, under RecallHeader.
type RecallRequest struct {
	// K is the most turns shown.
	K int
	// Query finds them; empty means the text of the context's last user
	// message.
	Query string
	// Share is as FactsRequest's.
	Share float64
}

// RecallHeader introduces the recalled turns in the system prompt.
const RecallHeader = "Relevant turns from earlier conversations (recalled by search; they may be out of date):"

// MaxRecalledText bounds the text of one recalled turn shown.
const MaxRecalledText = 1000

// ErrNoUser reports a request for a user's facts in a session without
// a user. Its field is "facts".
var ErrNoUser = &agentmem.InvalidError{Field: "facts", Reason: "the session has no user_id, so it has no facts to inject"}

// allowance is the tokens kept for an injection of this share of budget:
// -1 (no limit) without a budget.
func allowance(budget int, share float64) int {
	if budget <= 0 {
		return -1
	}
	if share <= 0 {
		share = facts.DefaultShare
	}
	return int(float64(budget) * share)
}

// Reserved is what the facts and recalled turns req asks for keep out of
// the budget its steps are fitted to.
func Reserved(req *ContextRequest) int {
	n := 0
	if req.Facts != nil && req.Facts.K > 0 {
		n += max(allowance(req.Budget, req.Facts.Share), 0)
	}
	if req.Recall != nil && req.Recall.K > 0 {
		n += max(allowance(req.Budget, req.Recall.Share), 0)
	}
	return n
}

// inject adds what req asks for to c: the facts first, then the recalled
// turns, each within its allowance.
func (s *Service) inject(ctx context.Context, req *ContextRequest, c *Context, counter tokenizer.Counter) error {
	if f := req.Facts; f != nil && f.K > 0 {
		if s.cfg.Facts == nil {
			return &agentmem.InvalidError{Field: "facts", Reason: "this server keeps no facts"}
		}
		if c.UserID == "" {
			return ErrNoUser
		}
		limit := allowance(req.Budget, f.Share)
		if limit < 0 {
			limit = math.MaxInt32
		}
		if limit > 0 {
			out, inj, err := s.cfg.Facts.Inject(ctx, c.Messages, facts.InjectOptions{Tenant: req.Tenant, UserID: c.UserID, Query: f.Query, K: f.K, Counter: counter, MaxTokens: limit})
			if err != nil {
				return err
			}
			c.Messages, c.Tokens, c.Facts = out, c.Tokens+inj.Tokens, inj.Hits
		}
		if c.Facts == nil {
			c.Facts = []facts.Hit{}
		}
	}
	if r := req.Recall; r != nil && r.K > 0 {
		if s.cfg.Recall == nil {
			return &agentmem.InvalidError{Field: "recall", Reason: "this server keeps no recall index"}
		}
		limit := allowance(req.Budget, r.Share)
		if limit < 0 {
			limit = math.MaxInt32
		}
		query := r.Query
		if query == "" {
			query = lastUserText(c.Messages)
		}
		if query == "" || limit < 1 {
			return nil
		}
		q := recall.Query{Tenant: req.Tenant, Text: agentmem.TruncateText(query, recall.MaxTextBytes), K: r.K + 10}
		if c.UserID != "" {
			q.Filter.Metadata = map[string]string{recall.MetaUser: c.UserID}
		}
		hits, err := s.cfg.Recall.Search(ctx, q)
		if err != nil {
			return err
		}
		var lines []facts.Hit
		for _, h := range hits {
			if h.Doc.Group == req.SessionID || len(lines) == r.K {
				continue
			}
			lines = append(lines, facts.Hit{Fact: facts.Fact{ID: h.Doc.ID, Text: agentmem.TruncateText(h.Doc.Text, MaxRecalledText)}})
		}
		out, shown, used := facts.AddFacts(c.Messages, lines, counter, limit, RecallHeader)
		c.Messages, c.Tokens = out, c.Tokens+used
		for _, h := range shown {
			c.Recalled = append(c.Recalled, h.Fact.ID)
		}
	}
	return nil
}

// lastUserText returns the text of the last user message that has one.
func lastUserText(msgs []agentmem.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == agentmem.RoleUser && msgs[i].Text() != "" {
			return msgs[i].Text()
		}
	}
	return ""
}
