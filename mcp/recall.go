package mcp

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/textcut"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
)

// Bounds of search_memory's arguments.
const (
	// MaxSearchK bounds search_memory's k.
	MaxSearchK = 50
	// DefaultSearchK is search_memory's k when none is given.
	DefaultSearchK = 10
	// MaxWindow bounds search_memory's before and after.
	MaxWindow = 10
)

// SearchMemoryInput is the input of search_memory.
type SearchMemoryInput struct {
	Query     string `json:"query" jsonschema:"what to look for, in a few words or a question, e.g. where does the user live"`
	K         int    `json:"k,omitempty" jsonschema:"the most matching turns to return"`
	Offset    int    `json:"offset,omitempty" jsonschema:"skip this many of the best matches: pass the next_offset of an earlier call, with the same arguments, to see the matches it left out"`
	SessionID string `json:"session_id,omitempty" jsonschema:"only the turns of this session, as it sees them: for a branch, those it inherited too"`
	UserID    string `json:"user_id,omitempty" jsonschema:"only the turns of this user's sessions"`
	Agent     string `json:"agent,omitempty" jsonschema:"only the turns of this agent's sessions"`
	Before    int    `json:"before,omitempty" jsonschema:"with each match, also return up to this many turns that came just before it in its session"`
	After     int    `json:"after,omitempty" jsonschema:"with each match, also return up to this many turns that came just after it in its session"`
	// Similarity is "bm25" (the default) or "tfidf".
	Similarity string `json:"similarity,omitempty" jsonschema:"how to score matches: bm25 (the default, best for recall) or tfidf (TF-IDF cosine, as simple in-memory vector stores score)"`
}

// Turn is a turn of a past session (a step of its log) as search_memory
// shows it.
type Turn struct {
	SessionID string     `json:"session_id,omitempty" jsonschema:"the session the turn belongs to (get_context reads it)"`
	Seq       int64      `json:"seq,omitempty" jsonschema:"the turn's log sequence number in its session, as append and get_context number steps"`
	Time      *time.Time `json:"time,omitempty" jsonschema:"when the turn happened"`
	Kind      string     `json:"kind,omitempty" jsonschema:"the kind of step: task (a user's request), action (an assistant's reply, with its tool calls and their results), message, final_answer, summary, ..."`
	Text      string     `json:"text" jsonschema:"what the turn said or did, as indexed (long tool outputs are cut)"`
	Truncated bool       `json:"truncated,omitempty" jsonschema:"the text was longer than 2000 bytes and is cut to its beginning"`
}

// MemoryHit is a turn search_memory found.
type MemoryHit struct {
	Turn
	ID     string  `json:"id" jsonschema:"the indexed document's ID (session#seq for a turn)"`
	Score  float64 `json:"score" jsonschema:"relevance to the query; higher is better, comparable only within one search"`
	UserID string  `json:"user_id,omitempty" jsonschema:"the user of the turn's session"`
	Agent  string  `json:"agent,omitempty" jsonschema:"the agent of the turn's session"`
	Before []Turn  `json:"before,omitempty" jsonschema:"the turns just before it in its session, oldest first (when before was asked for)"`
	After  []Turn  `json:"after,omitempty" jsonschema:"the turns just after it in its session, oldest first (when after was asked for)"`
}

// SearchMemoryOutput is the output of search_memory.
type SearchMemoryOutput struct {
	Hits []MemoryHit `json:"hits" jsonschema:"the matching turns, most relevant first"`
	// NextOffset is set when matches were left out to keep the output
	// within MaxOutputBytes.
	NextOffset int `json:"next_offset,omitempty" jsonschema:"set when more matches were found than fit in this result: call search_memory again with the same arguments and this offset to see them"`
	// Note says what was cut and how to get it.
	Note string `json:"note,omitempty" jsonschema:"what was left out or cut to keep this result short, and how to see it"`
}

var searchMemorySchema = []edit{
	at("query", length(1, MaxQueryBytes)),
	at("k", between(1, MaxSearchK), byDefault(DefaultSearchK)),
	at("offset", between(0, MaxOffset)),
	at("session_id", sessionIDEdits...),
	at("user_id", length(0, store.MaxFieldBytes)),
	at("agent", length(0, store.MaxFieldBytes)),
	at("before", between(0, MaxWindow)),
	at("after", between(0, MaxWindow)),
}

const searchMemoryDescription = `Search the turns of past conversations (every session's messages, tool calls and results) for what is relevant to a query, ` +
	`across sessions or only those of one session, user or agent. Ranking is by words (stemmed, so "moving" finds "moved"), not exact phrases. ` +
	`Returns the matching turns, best first, each with its session_id, seq, time, text and score, and, with before or after, the turns around it for context. ` +
	`A result holds at most 32 KiB: each turn's text is cut to 2000 bytes, and matches that do not fit are left out, with a next_offset to see them.`

func (t *tools) searchMemory(ctx context.Context, in SearchMemoryInput) (SearchMemoryOutput, error) {
	const op = "search_memory"
	q, err := t.searchQuery(in)
	if err != nil {
		return SearchMemoryOutput{}, t.toolError(ctx, op, err)
	}
	t.waitForIndex(ctx)
	q.K += in.Offset
	hits, err := t.cfg.Recall.Search(ctx, q)
	if err != nil {
		return SearchMemoryOutput{}, t.toolError(ctx, op, err)
	}
	hits = hits[min(in.Offset, len(hits)):]
	out := SearchMemoryOutput{Hits: make([]MemoryHit, len(hits))}
	for i, h := range hits {
		out.Hits[i] = memoryHit(h)
	}
	var note notes
	if n := fitting(out.Hits); n < len(out.Hits) {
		out.Hits, out.NextOffset = out.Hits[:n], in.Offset+n
		note.add("More matches were found than fit in this result: call search_memory again with the same arguments and offset %d to see them.", out.NextOffset)
	}
	if len(out.Hits) == 1 && fitWindow(&out.Hits[0]) {
		note.add("Only the turns nearest the match fit of those around it: ask for fewer (before, after) or search within its session (session_id) for the rest.")
	}
	for _, h := range out.Hits {
		if h.Truncated || slices.ContainsFunc(h.Before, func(t Turn) bool { return t.Truncated }) || slices.ContainsFunc(h.After, func(t Turn) bool { return t.Truncated }) {
			note.add("Turns marked truncated are cut to their first %d bytes.", MaxTurnTextBytes)
			break
		}
	}
	out.Note = note.String()
	return out, nil
}

// fitWindow drops the turns around a match, farthest first, until the
// match fits in MaxOutputBytes less outputSlack, and reports whether it
// dropped any.
func fitWindow(h *MemoryHit) bool {
	cut := false
	for jsonSize(h) > MaxOutputBytes-outputSlack && len(h.Before)+len(h.After) > 0 {
		if len(h.Before) >= len(h.After) {
			h.Before = h.Before[1:]
		} else {
			h.After = h.After[:len(h.After)-1]
		}
		cut = true
	}
	return cut
}

// indexWait bounds how long search_memory waits for the recall index to
// reach the writes made before it.
const indexWait = 2 * time.Second

// waitForIndex waits until the recall index has every write committed
// before the call, when it follows the store's log
// (Config.RecallFollower). It waits at most indexWait, so that an agent
// finds what it has just appended. If the index is further behind, the
// search goes on with what it has, and the delay is logged.
func (t *tools) waitForIndex(ctx context.Context) {
	f := t.cfg.RecallFollower
	if f == nil {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, indexWait)
	defer cancel()
	if err := f.Sync(wctx); err != nil && ctx.Err() == nil {
		t.cfg.Logger.WarnContext(ctx, "search_memory: the recall index is behind the log; searching what it has", "err", err)
	}
}

// searchQuery checks search_memory's arguments and returns the search of
// the tenant they ask for.
func (t *tools) searchQuery(in SearchMemoryInput) (recall.Query, error) {
	if strings.TrimSpace(in.Query) == "" {
		return recall.Query{}, invalid("query", "is empty: say what to look for, in a few words")
	}
	if err := checkString("query", in.Query, MaxQueryBytes); err != nil {
		return recall.Query{}, err
	}
	if in.K == 0 {
		in.K = DefaultSearchK
	}
	if in.K < 1 || in.K > MaxSearchK {
		return recall.Query{}, invalid("k", "must be between 1 and %d", MaxSearchK)
	}
	if in.Offset < 0 || in.Offset > MaxOffset {
		return recall.Query{}, invalid("offset", "must be between 0 and %d", MaxOffset)
	}
	if in.Before < 0 || in.Before > MaxWindow {
		return recall.Query{}, invalid("before", "must be between 0 and %d", MaxWindow)
	}
	if in.After < 0 || in.After > MaxWindow {
		return recall.Query{}, invalid("after", "must be between 0 and %d", MaxWindow)
	}
	if in.SessionID != "" {
		if err := store.ValidateID(in.SessionID); err != nil {
			return recall.Query{}, badSessionID(in.SessionID)
		}
	}
	if err := checkString("user_id", in.UserID, store.MaxFieldBytes); err != nil {
		return recall.Query{}, err
	}
	if err := checkString("agent", in.Agent, store.MaxFieldBytes); err != nil {
		return recall.Query{}, err
	}
	sim, err := recall.ParseSimilarity(in.Similarity)
	if err != nil {
		return recall.Query{}, invalid("similarity", "must be bm25 or tfidf, not %q", in.Similarity)
	}
	return recall.Query{
		Tenant: t.tenant, Text: in.Query, K: in.K, Filter: recall.Scope(in.SessionID, in.UserID, in.Agent),
		Before: in.Before, After: in.After, Similarity: sim,
	}, nil
}

// memoryHit converts a search hit, splitting its window into the turns
// before and after it.
func memoryHit(h recall.Hit) MemoryHit {
	out := MemoryHit{
		Turn: turn(h.Doc), ID: h.Doc.ID, Score: h.Score,
		UserID: h.Doc.Metadata[recall.MetaUser], Agent: h.Doc.Metadata[recall.MetaAgent],
	}
	for _, d := range h.Window {
		switch {
		case d.ID == h.Doc.ID:
		case d.Seq < h.Doc.Seq:
			out.Before = append(out.Before, turn(d))
		default:
			out.After = append(out.After, turn(d))
		}
	}
	return out
}

// turn converts a document of the index: a conversation turn names its
// session and step (see recallview.StepDocs).
func turn(d recall.Doc) Turn {
	out := Turn{Text: d.Text, Kind: d.Metadata[recall.MetaKind]}
	if len(out.Text) > MaxTurnTextBytes {
		out.Text, out.Truncated = textcut.Prefix(out.Text, MaxTurnTextBytes), true
	}
	if sid := d.Metadata[recall.MetaSession]; sid != "" {
		out.SessionID = sid
		if seq, err := strconv.ParseInt(d.Metadata[recall.MetaStep], 10, 64); err == nil {
			out.Seq = seq
		} else {
			out.Seq = d.Seq
		}
	}
	if !d.Time.IsZero() {
		tm := d.Time
		out.Time = &tm
	}
	return out
}
