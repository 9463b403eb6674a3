package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/agentmem/agentmem/api"
)

// ContextOptions are the query parameters of GET
// /v1/sessions/{id}/context. Zero values leave a parameter out.
type ContextOptions struct {
	// Budget is the token budget (0: none).
	Budget int
	// Format is "openai" (the default), "anthropic" or "observation".
	Format string
	// Tokenizer names the token counter ("o200k_base", ...); empty means
	// the server's default.
	Tokenizer string
	// Truncate cuts observations to fill the budget instead of dropping
	// whole steps.
	Truncate bool
	// Facts injects up to Facts facts about the session's user into the
	// system prompt; FactsQuery and FactsShare (of the budget, in
	// (0, 0.9]) tune it.
	Facts      int
	FactsQuery string
	FactsShare float64
}

// Context returns the context of a session that fits a budget, as the
// server renders it (GET /v1/sessions/{id}/context). The response's
// Messages holds the request body's messages as a json.RawMessage, in the
// format's wire form: an array of OpenAI chat messages for "openai" and
// "observation" (OpenAIMessages decodes it), an object {"system",
// "messages"} of Anthropic's Messages API for "anthropic".
func (c *Client) Context(ctx context.Context, sessionID string, opts ContextOptions) (*api.ContextResponse, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	q := url.Values{}
	if opts.Budget != 0 {
		q.Set("budget", strconv.Itoa(opts.Budget))
	}
	if opts.Format != "" {
		q.Set("format", opts.Format)
	}
	if opts.Tokenizer != "" {
		q.Set("tokenizer", opts.Tokenizer)
	}
	if opts.Truncate {
		q.Set("truncate", "true")
	}
	if opts.Facts != 0 {
		q.Set("facts", strconv.Itoa(opts.Facts))
	}
	if opts.FactsQuery != "" {
		q.Set("facts_query", opts.FactsQuery)
	}
	if opts.FactsShare != 0 {
		q.Set("facts_share", strconv.FormatFloat(opts.FactsShare, 'g', -1, 64))
	}
	var raw json.RawMessage
	out := api.ContextResponse{Messages: &raw}
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/sessions/" + pathID(sessionID) + "/context", query: q, idempotent: true}, &out); err != nil {
		return nil, err
	}
	out.Messages = raw
	return &out, nil
}

// OpenAIMessages decodes the messages of a context rendered in the
// "openai" or "observation" format.
func OpenAIMessages(resp *api.ContextResponse) ([]api.OpenAIMessage, error) {
	raw, ok := resp.Messages.(json.RawMessage)
	if !ok {
		return nil, errors.New("agentmem client: the context's messages are not raw JSON (not from Client.Context)")
	}
	var msgs []api.OpenAIMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, fmt.Errorf("agentmem client: the context's messages are not OpenAI messages (format %q): %w", resp.Format, err)
	}
	return msgs, nil
}

// CompactRequest is the body of POST /v1/sessions/{id}/compact. Which
// fields apply depends on the strategy (api.StrategyKeepLastN,
// StrategyTokenBudget, StrategyPruneOldObservations, StrategySummarize);
// a field of another strategy is refused (400). Nil pointers are left out.
type CompactRequest = api.CompactRequest

// Int returns a pointer to v, for the fields of CompactRequest.
func Int(v int) *int { return &v }

// Compact prunes or summarizes a session's working set now (POST
// /v1/sessions/{id}/compact). The log keeps every step it takes out.
func (c *Client) Compact(ctx context.Context, sessionID string, req CompactRequest) (*api.CompactResponse, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	return callFor[api.CompactResponse](ctx, c, request{method: http.MethodPost, path: "/v1/sessions/" + pathID(sessionID) + "/compact", body: req})
}

// AppendMessages appends chat messages (POST /v1/sessions/{id}/messages):
// the server folds them into steps (agentmem.FoldMessages). Messages may
// be sent one at a time. An assistant message whose tool calls have no
// results yet is kept pending, and tool messages sent later complete it
// (the response's Updated names the actions they completed). The context
// leaves pending calls out and lists them in ContextResponse.Pending (see
// opts.FlushPending). The request carries an Idempotency-Key
// (opts.IdempotencyKey, or a new one), so a retry stores nothing twice.
func (c *Client) AppendMessages(ctx context.Context, sessionID string, msgs []api.OpenAIMessage, opts AppendOptions) (*api.AppendResponse, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	var q url.Values
	if opts.FlushPending {
		q = url.Values{"flush_pending": {"true"}}
	}
	if msgs == nil {
		msgs = []api.OpenAIMessage{}
	}
	if opts.IdempotencyKey == "" {
		// A key of its own makes the request safe to send again.
		opts.IdempotencyKey = newKey()
	}
	return callFor[api.AppendResponse](ctx, c, request{method: http.MethodPost, path: "/v1/sessions/" + pathID(sessionID) + "/messages", query: q,
		body: msgs, header: opts.header(), idempotent: true})
}

// RecallQuery is a recall search (GET /v1/recall/search).
type RecallQuery struct {
	// Text is what to search for (q); required.
	Text string
	// K is the number of hits (0: the server's default,
	// api.DefaultRecallK).
	K int
	// Offset skips the Offset best hits (at most api.MaxRecallOffset).
	// An answer holds at most api.MaxRecallSearchBytes of hits: when
	// SearchRecall returns fewer than K hits, searching again with Offset
	// moved past them gets any the server left out.
	Offset int
	// Scope limits the search: "session:ID", "user:ID" or "agent:ID";
	// empty searches the tenant's whole index.
	Scope string
	// Filter lists metadata pairs "key:value" every hit must have
	// (filter=, repeated).
	Filter []string
	// Similarity is "bm25" (empty: the server's default, BM25) or "tfidf"
	// (TF-IDF cosine).
	Similarity string
	// Before and After ask for that many neighbouring turns of each hit
	// (RecallHit.Window).
	Before, After int
	// Fresh waits (bounded by the server) until the index has every write
	// acknowledged before the search (fresh=true): read-your-writes. The
	// server answers 503 index_behind if it cannot in time.
	Fresh bool
}

// UpsertRecall adds documents to the tenant's recall index, or replaces
// those with the same IDs (POST /v1/recall), and returns their IDs, in
// order (generated where none was given).
func (c *Client) UpsertRecall(ctx context.Context, docs ...api.RecallDocument) ([]string, error) {
	if docs == nil {
		docs = []api.RecallDocument{}
	}
	var out api.UpsertRecallResponse
	if _, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/recall", body: api.UpsertRecallRequest{Documents: docs}}, &out); err != nil {
		return nil, err
	}
	if len(out.IDs) != len(docs) {
		return nil, fmt.Errorf("agentmem client: the server answered %d IDs for %d documents", len(out.IDs), len(docs))
	}
	return out.IDs, nil
}

// SearchRecall searches the tenant's recall index: its documents and the
// conversation turns of its sessions (GET /v1/recall/search).
func (c *Client) SearchRecall(ctx context.Context, q RecallQuery) ([]api.RecallHit, error) {
	v := url.Values{"q": {q.Text}}
	if q.K != 0 {
		v.Set("k", strconv.Itoa(q.K))
	}
	if q.Offset != 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	if q.Scope != "" {
		v.Set("scope", q.Scope)
	}
	if len(q.Filter) > 0 {
		v["filter"] = q.Filter
	}
	if q.Similarity != "" {
		v.Set("similarity", q.Similarity)
	}
	if q.Before != 0 {
		v.Set("before", strconv.Itoa(q.Before))
	}
	if q.After != 0 {
		v.Set("after", strconv.Itoa(q.After))
	}
	if q.Fresh {
		v.Set("fresh", "true")
	}
	var out api.RecallSearchResponse
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/recall/search", query: v, idempotent: true}, &out); err != nil {
		return nil, err
	}
	c.reportDamaged(ctx, "document", out.Damaged)
	return out.Hits, nil
}

// GetRecall returns a document of the recall index (GET /v1/recall/{doc}).
func (c *Client) GetRecall(ctx context.Context, docID string) (*api.RecallDocument, error) {
	if err := checkID("doc", docID); err != nil {
		return nil, err
	}
	return callFor[api.RecallDocument](ctx, c, request{method: http.MethodGet, path: "/v1/recall/" + pathID(docID), idempotent: true})
}

// DeleteRecall deletes a document of the recall index (DELETE
// /v1/recall/{doc}); a missing one is ErrNotFound.
func (c *Client) DeleteRecall(ctx context.Context, docID string) error {
	if err := checkID("doc", docID); err != nil {
		return err
	}
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/recall/" + pathID(docID)})
	return err
}

// Remember records a fact about a user, or reinforces the same fact
// already known (POST /v1/users/{user}/facts); the response's Outcome
// says which.
func (c *Client) Remember(ctx context.Context, userID string, req api.RememberRequest) (*api.RememberResponse, error) {
	if err := checkID("user", userID); err != nil {
		return nil, err
	}
	return callFor[api.RememberResponse](ctx, c, request{method: http.MethodPost, path: "/v1/users/" + pathID(userID) + "/facts", body: req})
}

// ExtractFacts has the server's fact extractor (its model) learn about a
// user from a conversation turn (POST /v1/users/{user}/facts/extract).
// Given the user's facts already known, it adds, reinforces and
// supersedes facts, at once. The response lists each decision with what
// it did. A server without a model answers errors.ErrUnsupported
// (501 not_configured); a model that fails, ErrUnavailable (502
// extraction_failed), with nothing written. It is not retried: an
// extraction sent twice reinforces what it taught twice.
func (c *Client) ExtractFacts(ctx context.Context, userID string, req api.ExtractFactsRequest) (*api.ExtractFactsResponse, error) {
	if err := checkID("user", userID); err != nil {
		return nil, err
	}
	return callFor[api.ExtractFactsResponse](ctx, c, request{method: http.MethodPost, path: "/v1/users/" + pathID(userID) + "/facts/extract", body: req})
}

// FactsQuery selects a user's facts (GET /v1/users/{user}/facts). With
// Text or K, the facts most relevant to Text, ranked by relevance times
// confidence (Relevance and Score set); with neither, every valid fact,
// most confident first, read a page at a time.
type FactsQuery struct {
	Text              string
	K                 int
	MinConfidence     float64
	IncludeSuperseded bool
	// AsOf, when set, asks for the facts that were true at that time
	// (their valid_from to valid_to holds it), superseded ones included.
	AsOf time.Time
	// Filter keeps the facts whose metadata has every key with its value
	// (at most api.MaxFactFilters).
	Filter map[string]string
}

// SearchFacts returns a user's facts (see FactsQuery).
func (c *Client) SearchFacts(ctx context.Context, userID string, q FactsQuery) ([]api.FactView, error) {
	if err := checkID("user", userID); err != nil {
		return nil, err
	}
	v := url.Values{}
	if q.Text != "" {
		v.Set("q", q.Text)
	}
	if q.K != 0 {
		v.Set("k", strconv.Itoa(q.K))
	}
	if q.MinConfidence != 0 {
		v.Set("min_confidence", strconv.FormatFloat(q.MinConfidence, 'g', -1, 64))
	}
	if q.IncludeSuperseded {
		v.Set("include_superseded", "true")
	}
	if !q.AsOf.IsZero() {
		v.Set("as_of", q.AsOf.UTC().Format(time.RFC3339Nano))
	}
	for _, k := range slices.Sorted(maps.Keys(q.Filter)) {
		v.Add("filter", k+":"+q.Filter[k])
	}
	// A list (neither Text nor K) comes a page at a time
	// (api.DefaultFactsPageSize facts): every page is read.
	var all []api.FactView
	for {
		var out api.FactsResponse
		if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/users/" + pathID(userID) + "/facts", query: v, idempotent: true}, &out); err != nil {
			return nil, err
		}
		c.reportDamaged(ctx, "fact", out.Damaged)
		if all == nil {
			all = out.Facts
		} else {
			all = append(all, out.Facts...)
		}
		if out.NextPageToken == "" {
			return all, nil
		}
		if len(out.Facts) == 0 {
			return nil, fmt.Errorf("agentmem client: the server returned an empty page of facts with a next page")
		}
		v.Set("page_token", out.NextPageToken)
	}
}

// GetFact returns a fact of a user and the chain of facts it superseded
// or that superseded it (GET /v1/users/{user}/facts/{fact}).
func (c *Client) GetFact(ctx context.Context, userID, factID string) (*api.FactResponse, error) {
	if err := checkID("user", userID); err != nil {
		return nil, err
	}
	if err := checkID("fact", factID); err != nil {
		return nil, err
	}
	return callFor[api.FactResponse](ctx, c, request{method: http.MethodGet, path: "/v1/users/" + pathID(userID) + "/facts/" + pathID(factID), idempotent: true})
}

// Forget deletes a user's fact for good (DELETE
// /v1/users/{user}/facts/{fact}); the user's audit log records the API
// key, the time and reason (empty: the server's default).
func (c *Client) Forget(ctx context.Context, userID, factID, reason string) error {
	if err := checkID("user", userID); err != nil {
		return err
	}
	if err := checkID("fact", factID); err != nil {
		return err
	}
	var q url.Values
	if reason != "" {
		q = url.Values{"reason": {reason}}
	}
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/users/" + pathID(userID) + "/facts/" + pathID(factID), query: q})
	return err
}
