package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/internal/textcut"
	"github.com/google/jsonschema-go/jsonschema"
)

// Bounds of the facts tools' arguments (the facts package bounds the rest:
// facts.MaxTextBytes, facts.MaxFieldBytes, facts.MaxReasonBytes,
// facts.MaxMetadataKeys).
const (
	// MaxFactsK bounds recall_facts' k.
	MaxFactsK = 100
	// DefaultFactsK is recall_facts' k when none is given.
	DefaultFactsK = 10
	// MaxQueryBytes bounds the query of recall_facts and search_memory.
	MaxQueryBytes = 8 << 10
)

// FactInfo is a user fact as the tools show it.
type FactInfo struct {
	ID             string            `json:"id" jsonschema:"the fact's ID, to pass as fact_id to forget"`
	UserID         string            `json:"user_id" jsonschema:"the user the fact is about"`
	Text           string            `json:"text" jsonschema:"the fact, one self-contained statement about the user"`
	Confidence     float64           `json:"confidence" jsonschema:"what the fact is worth now, from 0 to 1: its confidence decayed since it was last seen (low: old or uncertain)"`
	BaseConfidence float64           `json:"base_confidence" jsonschema:"its confidence when it was last remembered or reinforced, before decay"`
	CreatedAt      time.Time         `json:"created_at" jsonschema:"when the fact was first remembered"`
	ReinforcedAt   time.Time         `json:"reinforced_at" jsonschema:"when it was last remembered or seen again; decay runs from then"`
	Reinforcements int               `json:"reinforcements" jsonschema:"how many times it was remembered again after it was added"`
	SessionID      string            `json:"session_id,omitempty" jsonschema:"the session it was first learnt in"`
	Agent          string            `json:"agent,omitempty" jsonschema:"the agent or MCP client that first remembered it"`
	Metadata       map[string]string `json:"metadata,omitempty" jsonschema:"free-form labels"`
	ValidFrom      time.Time         `json:"valid_from" jsonschema:"when the fact became true in the world (by default when it was remembered)"`
	ValidTo        *time.Time        `json:"valid_to,omitempty" jsonschema:"when it stopped being true; absent while it holds"`
}

// factInfo converts a fact, with its effective confidence now.
func (t *tools) factInfo(f facts.Fact) FactInfo {
	fi := FactInfo{
		ID: f.ID, UserID: f.UserID, Text: f.Text, Confidence: t.cfg.Facts.Confidence(f), BaseConfidence: f.Confidence,
		CreatedAt: f.CreatedAt, ReinforcedAt: f.ReinforcedAt, Reinforcements: f.Reinforcements,
		SessionID: f.Source.SessionID, Agent: f.Source.Agent, Metadata: f.Metadata, ValidFrom: f.ValidFrom,
	}
	if !f.ValidTo.IsZero() {
		to := f.ValidTo
		fi.ValidTo = &to
	}
	return fi
}

// timeArg parses an RFC 3339 time argument; empty is the zero time.
func timeArg(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, invalid(field, "%.40q is not an RFC 3339 time such as 2026-03-01T12:00:00Z", v)
	}
	return t, nil
}

// Schema edits shared by the facts tools.
var userIDEdits = []func(*jsonschema.Schema){length(1, facts.MaxFieldBytes)}

// remember

// RememberInput is the input of remember.
type RememberInput struct {
	UserID     string            `json:"user_id" jsonschema:"the user the fact is about, as your application identifies them (the user_id of their sessions)"`
	Text       string            `json:"text" jsonschema:"the fact as one short self-contained sentence in the third person, e.g. Prefers metric units."`
	Confidence float64           `json:"confidence,omitempty" jsonschema:"how sure the fact is, from 0 to 1 (1: the user said it plainly); 0 or absent: the memory's default (0.7)"`
	SessionID  string            `json:"session_id,omitempty" jsonschema:"the session the fact was learnt in, recorded as its source (it must exist)"`
	Metadata   map[string]string `json:"metadata,omitempty" jsonschema:"free-form string labels, such as a topic"`
	ValidFrom  string            `json:"valid_from,omitempty" jsonschema:"when the fact became true in the world, RFC 3339 (e.g. 2026-03-01T00:00:00Z); absent: now"`
	ValidTo    string            `json:"valid_to,omitempty" jsonschema:"when it stopped being true, RFC 3339, after valid_from; absent: it still holds"`
}

// RememberOutput is the output of remember.
type RememberOutput struct {
	Outcome string   `json:"outcome" jsonschema:"added: a new fact; reinforced: a fact saying the same was known, and its confidence rose; ignored: the same fact was already learnt at this point of the same session, so nothing changed"`
	Fact    FactInfo `json:"fact" jsonschema:"the fact as now remembered"`
}

var rememberSchema = []edit{
	at("user_id", userIDEdits...),
	at("text", length(1, facts.MaxTextBytes)),
	at("confidence", between(0, 1)),
	at("session_id", sessionIDEdits...),
	at("metadata", maxProperties(facts.MaxMetadataKeys)),
	at("valid_from", length(0, 64)),
	at("valid_to", length(0, 64)),
}

// source is the source a call records on the facts it writes: the calling
// agent, or, with a session ID, that session of this tenant at the turn it
// has reached, and its agent if it has one. Remembering the same fact
// again at the same point of the same session is then a replay, and
// changes nothing.
func (t *tools) source(ctx context.Context, sessionID string) (facts.Source, error) {
	src := facts.Source{Agent: caller(ctx)}
	if sessionID == "" {
		return src, nil
	}
	s, err := t.session(ctx, sessionID)
	if err != nil {
		return facts.Source{}, err
	}
	src.SessionID, src.StepSeq = s.ID, s.LastSeq
	if s.Agent != "" {
		src.Agent = s.Agent
	}
	return src, nil
}

const rememberDescription = `Remember a durable fact about a user for future conversations: a preference, circumstance, relationship, plan or constraint that the user stated. ` +
	`Write it as one short self-contained sentence in the third person, for example "Prefers metric units.". ` +
	`Remembering a fact that is already known (the same meaning in similar words) reinforces it instead of adding it twice. ` +
	`Do not store secrets such as passwords. Returns the fact, with its id, and whether it was added or reinforced.`

func (t *tools) remember(ctx context.Context, in RememberInput) (RememberOutput, error) {
	const op = "remember"
	if err := facts.ValidateUser(t.tenant, in.UserID); err != nil {
		return RememberOutput{}, t.toolError(ctx, op, err)
	}
	text := strings.TrimSpace(in.Text)
	if text == "" {
		return RememberOutput{}, t.toolError(ctx, op, invalid("text", "is empty: write the fact as one short sentence"))
	}
	if err := checkString("text", text, facts.MaxTextBytes); err != nil {
		return RememberOutput{}, t.toolError(ctx, op, err)
	}
	if in.Confidence < 0 || in.Confidence > 1 {
		return RememberOutput{}, t.toolError(ctx, op, invalid("confidence", "%v is not between 0 and 1", in.Confidence))
	}
	if len(in.Metadata) > facts.MaxMetadataKeys {
		return RememberOutput{}, t.toolError(ctx, op, invalid("metadata", "has %d labels; at most %d", len(in.Metadata), facts.MaxMetadataKeys))
	}
	from, err := timeArg("valid_from", in.ValidFrom)
	if err != nil {
		return RememberOutput{}, t.toolError(ctx, op, err)
	}
	to, err := timeArg("valid_to", in.ValidTo)
	if err != nil {
		return RememberOutput{}, t.toolError(ctx, op, err)
	}
	src, err := t.source(ctx, in.SessionID)
	if err != nil {
		return RememberOutput{}, t.toolError(ctx, op, err)
	}
	res, err := t.cfg.Facts.Remember(ctx, facts.RememberRequest{
		Tenant: t.tenant, UserID: in.UserID, Text: text, Confidence: in.Confidence, Source: src, Metadata: in.Metadata, ValidFrom: from, ValidTo: to,
	})
	if err != nil {
		return RememberOutput{}, t.toolError(ctx, op, err)
	}
	return RememberOutput{Outcome: string(res.Outcome), Fact: t.factInfo(res.Fact)}, nil
}

// recall_facts

// RecallFactsInput is the input of recall_facts.
type RecallFactsInput struct {
	UserID string `json:"user_id" jsonschema:"the user whose facts to recall"`
	Query  string `json:"query,omitempty" jsonschema:"what to look for, in a few words, e.g. the user's last message; facts sharing no word with it are left out. Absent or empty: the user's most confident facts"`
	K      int    `json:"k,omitempty" jsonschema:"the most facts to return"`
	Offset int    `json:"offset,omitempty" jsonschema:"skip this many of the best facts: pass the next_offset of an earlier call, with the same arguments, to see the facts it left out"`
	AsOf   string `json:"as_of,omitempty" jsonschema:"an RFC 3339 time: recall what held then (superseded facts included) instead of now; confidence is still the one now"`
	// Metadata keeps the facts whose metadata has every pair.
	Metadata map[string]string `json:"metadata,omitempty" jsonschema:"keep only the facts whose metadata has every one of these labels, exactly"`
}

// FactHit is a fact recall_facts found.
type FactHit struct {
	FactInfo
	Relevance float64 `json:"relevance" jsonschema:"relevance to the query, from 0 to 1 (1 for every fact without a query)"`
	Score     float64 `json:"score" jsonschema:"relevance times confidence: the ranking key"`
}

// RecallFactsOutput is the output of recall_facts.
type RecallFactsOutput struct {
	Facts []FactHit `json:"facts" jsonschema:"the facts, best first: most relevant and most confident"`
	// NextOffset is set when facts were left out to keep the output
	// within MaxOutputBytes.
	NextOffset int `json:"next_offset,omitempty" jsonschema:"set when more facts were found than fit in this result: call recall_facts again with the same arguments and this offset to see them"`
	// Note says what was left out and how to get it.
	Note string `json:"note,omitempty" jsonschema:"what was left out to keep this result short, and how to see it"`
}

var recallFactsSchema = []edit{
	at("user_id", userIDEdits...),
	at("query", length(0, MaxQueryBytes)),
	at("k", between(1, MaxFactsK), byDefault(DefaultFactsK)),
	at("offset", between(0, MaxOffset)),
	at("as_of", length(0, 64)),
	at("metadata", maxProperties(facts.MaxMetadataFilters)),
}

const recallFactsDescription = `Recall what is remembered about a user: their facts most relevant to a query (or, without one, the most confident), best first, ` +
	`each with its id and its confidence now (0 to 1; facts not seen again fade over months, so low means old or uncertain). ` +
	`Call it at the start of a conversation or before answering something personal. ` +
	`A result holds at most 32 KiB: facts that do not fit are left out, with a next_offset to see them.`

func (t *tools) recallFacts(ctx context.Context, in RecallFactsInput) (RecallFactsOutput, error) {
	const op = "recall_facts"
	if err := facts.ValidateUser(t.tenant, in.UserID); err != nil {
		return RecallFactsOutput{}, t.toolError(ctx, op, err)
	}
	if err := checkString("query", in.Query, MaxQueryBytes); err != nil {
		return RecallFactsOutput{}, t.toolError(ctx, op, err)
	}
	if in.K == 0 {
		in.K = DefaultFactsK
	}
	if in.K < 1 || in.K > MaxFactsK {
		return RecallFactsOutput{}, t.toolError(ctx, op, invalid("k", "must be between 1 and %d", MaxFactsK))
	}
	if in.Offset < 0 || in.Offset > MaxOffset {
		return RecallFactsOutput{}, t.toolError(ctx, op, invalid("offset", "must be between 0 and %d", MaxOffset))
	}
	asOf, err := timeArg("as_of", in.AsOf)
	if err != nil {
		return RecallFactsOutput{}, t.toolError(ctx, op, err)
	}
	hits, err := t.cfg.Facts.Search(ctx, facts.SearchRequest{Tenant: t.tenant, UserID: in.UserID, Query: in.Query, K: in.Offset + in.K, AsOf: asOf, Metadata: in.Metadata})
	if err != nil {
		return RecallFactsOutput{}, t.toolError(ctx, op, err)
	}
	hits = hits[min(in.Offset, len(hits)):]
	out := RecallFactsOutput{Facts: make([]FactHit, len(hits))}
	for i, h := range hits {
		fi := t.factInfo(h.Fact)
		fi.Confidence = h.Confidence
		out.Facts[i] = FactHit{FactInfo: fi, Relevance: h.Relevance, Score: h.Score}
	}
	if n := fitting(out.Facts); n < len(out.Facts) {
		out.Facts, out.NextOffset = out.Facts[:n], in.Offset+n
		out.Note = fmt.Sprintf("More facts were found than fit in this result: call recall_facts again with the same arguments and offset %d to see them.", out.NextOffset)
	}
	return out, nil
}

// forget

// ForgetInput is the input of forget.
type ForgetInput struct {
	UserID string `json:"user_id" jsonschema:"the user the fact is about"`
	FactID string `json:"fact_id" jsonschema:"the id of the fact, as recall_facts or remember returned it"`
	Reason string `json:"reason" jsonschema:"why it is forgotten, e.g. the user asked, or it is wrong; kept in the user's audit log"`
}

// ForgetOutput is the output of forget.
type ForgetOutput struct {
	FactID string `json:"fact_id" jsonschema:"the id of the fact forgotten"`
	Text   string `json:"text" jsonschema:"what the fact said (the memory no longer has it)"`
}

var forgetSchema = []edit{
	at("user_id", userIDEdits...),
	at("fact_id", length(1, facts.MaxFieldBytes)),
	at("reason", length(1, facts.MaxReasonBytes)),
}

const forgetDescription = `Forget a remembered fact about a user for good, for example when the user asks you to or it is wrong. ` +
	`Give its id (from recall_facts) and why: the deletion is recorded in the user's audit log, without the fact's text. ` +
	`When a fact has only changed, remember the new one instead.`

func (t *tools) forget(ctx context.Context, in ForgetInput) (ForgetOutput, error) {
	op := "forget fact " + strconv.Quote(textcut.Prefix(in.FactID, 80))
	if err := facts.ValidateUser(t.tenant, in.UserID); err != nil {
		return ForgetOutput{}, t.toolError(ctx, op, err)
	}
	if err := checkFactID(in.FactID); err != nil {
		return ForgetOutput{}, t.toolError(ctx, op, err)
	}
	if strings.TrimSpace(in.Reason) == "" {
		return ForgetOutput{}, t.toolError(ctx, op, invalid("reason", "is empty: say why the fact is forgotten"))
	}
	if err := checkString("reason", in.Reason, facts.MaxReasonBytes); err != nil {
		return ForgetOutput{}, t.toolError(ctx, op, err)
	}
	m := t.cfg.Facts
	f, err := m.Get(ctx, t.tenant, in.FactID)
	if errors.Is(err, agentmem.ErrNotFound) || (err == nil && f.UserID != in.UserID) {
		// Another user's fact is, for this user, one that does not
		// exist; another tenant's is not found by Get at all.
		return ForgetOutput{}, t.toolError(ctx, op, factNotFound(in.UserID, in.FactID))
	}
	if err != nil {
		return ForgetOutput{}, t.toolError(ctx, op, err)
	}
	err = m.Forget(ctx, t.tenant, in.FactID, caller(ctx), in.Reason)
	if errors.Is(err, agentmem.ErrNotFound) { // forgotten meanwhile
		err = factNotFound(in.UserID, in.FactID)
	}
	if err != nil {
		return ForgetOutput{}, t.toolError(ctx, op, err)
	}
	return ForgetOutput{FactID: f.ID, Text: f.Text}, nil
}

// checkFactID checks a fact ID argument: 1 to facts.MaxFieldBytes bytes
// of printable UTF-8.
func checkFactID(id string) error {
	if id == "" {
		return invalid("fact_id", "is empty: give the id of a fact, as recall_facts shows it")
	}
	if err := checkString("fact_id", id, facts.MaxFieldBytes); err != nil {
		return err
	}
	if strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return invalid("fact_id", "%.80q is not a fact ID (recall_facts shows the user's facts with their ids)", id)
	}
	return nil
}

// factNotFound is the error for a fact that does not exist, or is another
// user's or another tenant's: the three look the same from outside.
func factNotFound(user, id string) error {
	return fmt.Errorf("%w: user %.80q has no fact %.80q (recall_facts shows the user's facts with their ids)", agentmem.ErrNotFound, user, id)
}

// checkString checks a text argument: valid UTF-8 without NUL, at most
// max bytes.
func checkString(field, v string, max int) error {
	switch {
	case !utf8.ValidString(v):
		return invalid(field, "is not valid UTF-8")
	case strings.IndexByte(v, 0) >= 0:
		return invalid(field, "contains a NUL character")
	case len(v) > max:
		return invalid(field, "is %d bytes long; at most %d", len(v), max)
	}
	return nil
}

// extract_facts

// Bounds of extract_facts' turn.
const (
	// MaxExtractMessages bounds the messages of one turn.
	MaxExtractMessages = 100
	// MaxExtractBytes bounds the text of one turn, all messages
	// together: a turn, not a transcript.
	MaxExtractBytes = 64 << 10
)

// TurnMessage is a message of the turn extract_facts learns from.
type TurnMessage struct {
	Role    string `json:"role" jsonschema:"user (what the user said), assistant (the answer) or system"`
	Content string `json:"content" jsonschema:"the message's text"`
}

// ExtractFactsInput is the input of extract_facts.
type ExtractFactsInput struct {
	UserID    string        `json:"user_id" jsonschema:"the user the facts are about, as your application identifies them (the user_id of their sessions)"`
	Messages  []TurnMessage `json:"messages" jsonschema:"the turn to learn from, oldest first: typically the user's message(s) and your answer"`
	SessionID string        `json:"session_id,omitempty" jsonschema:"the session the turn is from, recorded as the source of the facts it adds (it must exist)"`
}

// ExtractedFact is one decision of extract_facts and what it did.
type ExtractedFact struct {
	Action   string    `json:"action" jsonschema:"what the server's model decided: add, reinforce or supersede"`
	Outcome  string    `json:"outcome" jsonschema:"what it did: added, reinforced (the fact was known: its confidence rose), superseded (the old fact, in previous, no longer holds), or ignored (nothing written)"`
	Fact     *FactInfo `json:"fact,omitempty" jsonschema:"the fact added or reinforced, or the one that supersedes previous"`
	Previous *FactInfo `json:"previous,omitempty" jsonschema:"for superseded: the old fact, kept in its history"`
}

// ExtractFactsOutput is the output of extract_facts.
type ExtractFactsOutput struct {
	Decisions []ExtractedFact `json:"decisions" jsonschema:"what the turn taught, in order; empty when it taught nothing lasting"`
}

var extractFactsSchema = []edit{
	at("user_id", userIDEdits...),
	at("messages", array, items(1, MaxExtractMessages)),
	at("messages.[].role", enum(string(agentmem.RoleSystem), string(agentmem.RoleUser), string(agentmem.RoleAssistant))),
	at("messages.[].content", length(1, MaxExtractBytes)),
	at("session_id", sessionIDEdits...),
}

const extractFactsDescription = `Learn durable facts about a user from a conversation turn: the server's model reads the turn (the user's messages and your answer) with the facts already known, ` +
	`then adds new ones, reinforces those the turn confirms and supersedes those it contradicts (the old fact is kept in its history). ` +
	`Use it instead of remember when you would rather the server decide what is worth keeping. Returns what it decided and did.`

func (t *tools) extractFacts(ctx context.Context, in ExtractFactsInput) (ExtractFactsOutput, error) {
	const op = "extract_facts"
	if err := facts.ValidateUser(t.tenant, in.UserID); err != nil {
		return ExtractFactsOutput{}, t.toolError(ctx, op, err)
	}
	switch {
	case len(in.Messages) == 0:
		return ExtractFactsOutput{}, t.toolError(ctx, op, invalid("messages", "is empty: send the turn to learn from"))
	case len(in.Messages) > MaxExtractMessages:
		return ExtractFactsOutput{}, t.toolError(ctx, op, invalid("messages", "has %d messages; at most %d per turn", len(in.Messages), MaxExtractMessages))
	}
	msgs := make([]agentmem.Message, len(in.Messages))
	size := 0
	for i, m := range in.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		switch r := agentmem.Role(m.Role); r {
		case agentmem.RoleSystem, agentmem.RoleUser, agentmem.RoleAssistant:
		default:
			return ExtractFactsOutput{}, t.toolError(ctx, op, invalid(field+".role", "must be user, assistant or system, not %.40q", m.Role))
		}
		if strings.TrimSpace(m.Content) == "" {
			return ExtractFactsOutput{}, t.toolError(ctx, op, invalid(field+".content", "is empty"))
		}
		if err := checkString(field+".content", m.Content, MaxExtractBytes); err != nil {
			return ExtractFactsOutput{}, t.toolError(ctx, op, err)
		}
		if size += len(m.Content); size > MaxExtractBytes {
			return ExtractFactsOutput{}, t.toolError(ctx, op, invalid("messages", "hold more than %d bytes of text; send one turn", MaxExtractBytes))
		}
		msgs[i] = agentmem.Message{Role: agentmem.Role(m.Role), Content: agentmem.Text(m.Content)}
	}
	src, err := t.source(ctx, in.SessionID)
	if err != nil {
		return ExtractFactsOutput{}, t.toolError(ctx, op, err)
	}
	ex, err := t.cfg.Facts.Extract(ctx, t.cfg.Extractor, facts.Turn{Tenant: t.tenant, UserID: in.UserID, Messages: msgs, Source: src})
	var xe *facts.ExtractionError
	if errors.As(err, &xe) {
		// The model failed, not the call: its cause is no fault of the
		// arguments.
		t.cfg.Logger.WarnContext(ctx, "mcp extract_facts: the extractor failed", "tenant", t.tenant, "user", in.UserID, "attempts", xe.Attempts, "err", err)
		return ExtractFactsOutput{}, fmt.Errorf("%s failed: the server's model for fact extraction failed (%v); nothing was written: try again later, or remember the facts yourself", op, xe.Err)
	}
	if err != nil {
		return ExtractFactsOutput{}, t.toolError(ctx, op, err)
	}
	out := ExtractFactsOutput{Decisions: make([]ExtractedFact, len(ex.Decisions))}
	for i, d := range ex.Decisions {
		res := ex.Results[i]
		x := ExtractedFact{Action: string(d.Op), Outcome: string(res.Outcome)}
		if res.Fact.ID != "" {
			fi := t.factInfo(res.Fact)
			x.Fact = &fi
		}
		if res.Previous != nil {
			fi := t.factInfo(*res.Previous)
			x.Previous = &fi
		}
		out.Decisions[i] = x
	}
	return out, nil
}
