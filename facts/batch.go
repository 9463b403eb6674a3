package facts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/agentmem/agentmem"
)

// Op is what a Decision does.
type Op string

// The decisions an Extractor (or a caller of Apply) can take about a
// turn.
const (
	// OpAdd records Text as a new fact (or reinforces the valid fact
	// that already says it).
	OpAdd Op = "add"
	// OpReinforce says the fact FactID was seen again.
	OpReinforce Op = "reinforce"
	// OpSupersede says the fact FactID is no longer true and Text is.
	OpSupersede Op = "supersede"
	// OpIgnore says there is nothing to remember.
	OpIgnore Op = "ignore"
)

// Decision is one proposed change to a user's facts.
type Decision struct {
	Op Op `json:"action"`
	// FactID is the fact reinforced or superseded.
	FactID string `json:"id,omitempty"`
	// Text is the new fact, for add and supersede.
	Text string `json:"text,omitempty"`
	// Confidence in [0, 1] of the new observation; 0 means
	// Options.DefaultConfidence.
	Confidence float64 `json:"confidence,omitempty"`
}

// validate checks a decision's shape; field prefixes the field names of
// errors.
func (d Decision) validate(field string, src Source, md map[string]string) error {
	switch d.Op {
	case OpAdd, OpSupersede:
		if err := checkText(field+"text", d.Text); err != nil {
			return err
		}
	case OpReinforce, OpIgnore:
		if d.Text != "" && d.Op == OpIgnore {
			return invalid(field+"text", "an ignore decision has no text")
		}
	default:
		return invalid(field+"action", "unknown action %q (add, reinforce, supersede or ignore)", d.Op)
	}
	switch d.Op {
	case OpReinforce, OpSupersede:
		if err := checkField(field+"id", d.FactID, MaxFieldBytes, true); err != nil {
			return err
		}
	default:
		if d.FactID != "" {
			return invalid(field+"id", "an %s decision names no fact", d.Op)
		}
	}
	if err := checkConfidence(field+"confidence", d.Confidence); err != nil {
		return err
	}
	if err := checkSource(src); err != nil {
		return err
	}
	return checkMetadata(md)
}

// batch applies changes to a working copy of one user's facts, inside
// Store.Update, and collects what to write.
type batch struct {
	m              *Memory
	tenant, userID string
	now            time.Time
	facts          []Fact
	index          map[string]int
	terms          []map[string]int // analyzed text of facts[i], made on demand
	vecs           map[string][]float32
	dirty          map[string]bool
	deleted        []string
	audit          []AuditEntry
	// turn, when set, is the turn an extraction learns from, which its
	// audit entries name.
	turn *turnRef
}

func (m *Memory) newBatch(tenant, userID string, current []Fact, vecs map[string][]float32) *batch {
	b := &batch{
		m: m, tenant: tenant, userID: userID, now: m.now(),
		facts: current, index: make(map[string]int, len(current)),
		terms: make([]map[string]int, len(current)), vecs: vecs, dirty: map[string]bool{},
	}
	for i, f := range current {
		b.index[f.ID] = i
	}
	return b
}

// changes returns what the batch writes.
func (b *batch) changes() Changes {
	var c Changes
	for _, f := range b.facts {
		if b.dirty[f.ID] {
			c.Put = append(c.Put, f)
		}
	}
	c.Delete = b.deleted
	c.Audit = b.audit
	return c
}

// termsOf returns the analyzed text of facts[i].
func (b *batch) termsOf(i int) map[string]int {
	if b.terms[i] == nil {
		b.terms[i] = termFreq(b.facts[i].Text)
	}
	return b.terms[i]
}

// match returns the index of the valid fact most similar to text, other
// than the fact except, if it reaches the similarity threshold; else -1.
// Only facts whose validity overlaps [from, to) are candidates (a zero to
// is open-ended): the same statement about another period is another
// fact.
func (b *batch) match(text string, except string, from, to time.Time) int {
	tf := termFreq(text)
	vec := b.vecs[text]
	best, bestSim := -1, 0.0
	for i, f := range b.facts {
		if !f.Valid() || f.ID == except || !overlaps(f, from, to) {
			continue
		}
		var sim float64
		if vec != nil && f.Embedding != nil {
			if sim = cosine(vec, f.Embedding); sim < b.m.opts.EmbeddingSimilarity {
				continue
			}
		} else if sim = lexicalSimilarity(tf, b.termsOf(i), text, f.Text); sim < b.m.opts.Similarity {
			continue
		}
		if sim > bestSim {
			best, bestSim = i, sim
		}
	}
	return best
}

// overlaps reports whether f's validity and [from, to) share a moment; a
// zero to, or ValidTo, is open-ended.
func overlaps(f Fact, from, to time.Time) bool {
	return (to.IsZero() || f.ValidFrom.Before(to)) && (f.ValidTo.IsZero() || from.Before(f.ValidTo))
}

// confidence returns c, or the default for 0.
func (b *batch) confidence(c float64) float64 {
	if c == 0 {
		return b.m.opts.DefaultConfidence
	}
	return c
}

// reinforce raises facts[i]'s confidence with an observation of
// confidence c and restarts its decay.
func (b *batch) reinforce(i int, c float64) Fact {
	f := &b.facts[i]
	base := max(b.m.opts.Decay.Effective(*f, b.now), b.confidence(c))
	f.Confidence = min(1, base+(1-base)*b.m.opts.Gain)
	if b.now.After(f.ReinforcedAt) {
		f.ReinforcedAt = b.now
	}
	f.Reinforcements++
	b.dirty[f.ID] = true
	return f.Clone()
}

// validity is when a new fact holds: From (zero: when it is recorded)
// until To (zero: open-ended).
type validity struct{ From, To time.Time }

// from returns v.From, or the batch's time for zero.
func (b *batch) from(v validity) time.Time {
	if v.From.IsZero() {
		return b.now
	}
	return v.From
}

// add appends a new fact.
func (b *batch) add(text string, c float64, src Source, md map[string]string, v validity) Fact {
	f := Fact{
		ID: agentmem.NewID(), Tenant: b.tenant, UserID: b.userID, Text: text,
		Confidence: b.confidence(c), CreatedAt: b.now, ReinforcedAt: b.now,
		Source: src, Metadata: maps.Clone(md), Embedding: b.vecs[text],
		ValidFrom: b.from(v), ValidTo: v.To,
	}
	b.index[f.ID] = len(b.facts)
	b.facts = append(b.facts, f)
	b.terms = append(b.terms, nil)
	b.dirty[f.ID] = true
	e := b.entry(f.ID, ActionAdded, src.Agent, "")
	e.After = f.State()
	b.audit = append(b.audit, e)
	return f.Clone()
}

// entry returns an audit entry of the batch's user.
func (b *batch) entry(factID string, a Action, by, reason string) AuditEntry {
	e := AuditEntry{Tenant: b.tenant, UserID: b.userID, FactID: factID, Action: a, By: by, Reason: reason, At: b.now}
	if b.turn != nil {
		e.SessionID, e.StepSeq = b.turn.SessionID, b.turn.StepSeq
	}
	return e
}

// remember adds text or reinforces the fact that says it.
func (b *batch) remember(text string, c float64, src Source, md map[string]string, v validity) Result {
	i := b.match(text, "", b.from(v), v.To)
	if i < 0 {
		return Result{Outcome: OutcomeAdded, Fact: b.add(text, c, src, md, v)}
	}
	if src.SessionID != "" && b.facts[i].Source.SessionID == src.SessionID && b.facts[i].Source.StepSeq == src.StepSeq {
		return Result{Outcome: OutcomeIgnored, Fact: b.facts[i].Clone()}
	}
	return Result{Outcome: OutcomeReinforced, Fact: b.reinforce(i, c)}
}

// lookup returns the index of the user's fact id, or an ErrNotFound.
func (b *batch) lookup(id string) (int, error) {
	i, ok := b.index[id]
	if !ok || b.deletedID(id) {
		return -1, fmt.Errorf("facts: fact %.80q of user %.80q: %w", id, b.userID, agentmem.ErrNotFound)
	}
	return i, nil
}

// deletedID reports whether the batch forgot id.
func (b *batch) deletedID(id string) bool {
	for _, d := range b.deleted {
		if d == id {
			return true
		}
	}
	return false
}

// head follows id's successors to the valid fact that replaced it. A
// chain that ends at a forgotten fact is a conflict.
func (b *batch) head(id string) (int, error) {
	i, err := b.lookup(id)
	for n := 0; err == nil && !b.facts[i].Valid(); n++ {
		next := b.facts[i].SupersededBy
		j, ok := b.index[next]
		if !ok || b.deletedID(next) || n > len(b.facts) {
			return -1, fmt.Errorf("facts: fact %.80q was superseded by %.80q, which was forgotten: %w", id, next, agentmem.ErrConflict)
		}
		i = j
	}
	return i, err
}

// reinforceID reinforces the fact id, or the valid fact that replaced it.
func (b *batch) reinforceID(id string, c float64) (Result, error) {
	i, err := b.head(id)
	if err != nil {
		return Result{}, err
	}
	return Result{Outcome: OutcomeReinforced, Fact: b.reinforce(i, c)}, nil
}

// supersede replaces the fact id by text, and closes it. Its ValidTo
// becomes when the successor holds from (v.From, or now), unless it was
// already closed earlier. It is never before its own ValidFrom: a fact
// superseded before it held never held. With follow, a fact already
// superseded is followed to its valid successor (an extraction that raced
// with another); without, it is a conflict.
func (b *batch) supersede(id, text string, c float64, src Source, md map[string]string, by, reason string, follow bool, v validity) (Result, error) {
	i, err := b.lookup(id)
	if err != nil {
		return Result{}, err
	}
	if !b.facts[i].Valid() {
		if !follow {
			return Result{}, fmt.Errorf("facts: fact %.80q is already superseded by %.80q: %w", id, b.facts[i].SupersededBy, agentmem.ErrConflict)
		}
		if i, err = b.head(id); err != nil {
			return Result{}, err
		}
	}
	old := b.facts[i]
	if by == "" {
		by = src.Agent
	}
	if lexicalSimilarity(termFreq(text), b.termsOf(i), text, old.Text) >= b.m.opts.Similarity {
		// The "new" text says what the fact already says.
		return Result{Outcome: OutcomeReinforced, Fact: b.reinforce(i, c)}, nil
	}
	var succ Fact
	closeAt := b.from(v)
	if j := b.match(text, old.ID, closeAt, v.To); j >= 0 {
		succ = b.reinforce(j, c)
	} else {
		succ = b.add(text, c, src, md, v)
	}
	p := &b.facts[i]
	before := p.State()
	p.SupersededBy, p.SupersededAt = succ.ID, b.now
	closeAt = latest(closeAt, p.ValidFrom)
	if p.ValidTo.IsZero() || p.ValidTo.After(closeAt) {
		p.ValidTo = closeAt
	}
	b.dirty[p.ID] = true
	e := b.entry(p.ID, ActionSuperseded, by, reason)
	e.Successor = succ.ID
	e.Before, e.After = before, p.State()
	b.audit = append(b.audit, e)
	prev := p.Clone()
	return Result{Outcome: OutcomeSuperseded, Fact: succ, Previous: &prev}, nil
}

// latest returns the later of two times.
func latest(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// forget deletes the fact id.
func (b *batch) forget(id, by, reason string) error {
	i, err := b.lookup(id)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(b.facts[i].Text))
	e := b.entry(id, ActionForgotten, by, reason)
	e.Digest = "sha256:" + hex.EncodeToString(sum[:])
	b.audit = append(b.audit, e)
	b.deleted = append(b.deleted, id)
	delete(b.dirty, id)
	return nil
}

// Apply applies decisions to the user's facts in one Store.Update: all or
// none. They are applied in order against the user's facts as they are
// at that moment, not as the extractor saw them, so that concurrent
// extractions converge. An add of what a valid fact already says
// reinforces it. A reinforce or supersede of a fact that another
// extraction superseded meanwhile applies to its valid successor. A
// decision that names a fact the user does not have (or that was
// forgotten) fails the whole batch with agentmem.ErrNotFound; a malformed
// one with agentmem.ErrInvalid. The results are in the order of the
// decisions.
func (m *Memory) Apply(ctx context.Context, tenant, userID string, src Source, decisions []Decision) ([]Result, error) {
	return m.apply(ctx, tenant, userID, src, decisions, false)
}

// apply is Apply; with once, it also records, in the same Update, that
// the turn src names was extracted (an ActionExtracted entry), even when
// there are no decisions, and the batch's entries name the turn.
func (m *Memory) apply(ctx context.Context, tenant, userID string, src Source, decisions []Decision, once bool) ([]Result, error) {
	if err := ValidateUser(tenant, userID); err != nil {
		return nil, err
	}
	var texts []string
	for i, d := range decisions {
		if err := d.validate(fmt.Sprintf("decisions[%d].", i), src, nil); err != nil {
			return nil, err
		}
		if d.Text != "" {
			texts = append(texts, d.Text)
		}
	}
	if len(decisions) == 0 && !once {
		return nil, nil
	}
	vecs, err := m.embedTexts(ctx, texts)
	if err != nil {
		return nil, err
	}
	var results []Result
	err = m.store.Update(ctx, tenant, userID, func(current []Fact) (Changes, error) {
		b := m.newBatch(tenant, userID, current, vecs)
		if once {
			b.turn = &turnRef{src.SessionID, src.StepSeq}
		}
		results = make([]Result, len(decisions))
		for i, d := range decisions {
			var err error
			switch d.Op {
			case OpAdd:
				results[i] = b.remember(d.Text, d.Confidence, src, nil, validity{})
			case OpReinforce:
				results[i], err = b.reinforceID(d.FactID, d.Confidence)
			case OpSupersede:
				results[i], err = b.supersede(d.FactID, d.Text, d.Confidence, src, nil, src.Agent, "contradicted by a later turn", true, validity{})
			case OpIgnore:
				results[i] = Result{Outcome: OutcomeIgnored}
			}
			if err != nil {
				return Changes{}, fmt.Errorf("decisions[%d]: %w", i, err)
			}
		}
		if once {
			b.audit = append(b.audit, b.entry("", ActionExtracted, src.Agent, ""))
		}
		return b.changes(), nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// edit changes the fact req.ID in place and records the change.
func (b *batch) edit(req EditRequest) (Fact, error) {
	i, err := b.lookup(req.ID)
	if err != nil {
		return Fact{}, err
	}
	f := &b.facts[i]
	before := f.State()
	next := f.Clone()
	if req.Text != nil && *req.Text != f.Text {
		next.Text, next.Embedding = *req.Text, b.vecs[*req.Text]
	}
	if req.Confidence != nil && *req.Confidence != f.Confidence {
		next.Confidence = *req.Confidence
		next.ReinforcedAt = latest(b.now, f.ReinforcedAt)
	}
	if req.ClearMetadata || len(req.Metadata) > 0 {
		md := map[string]string{}
		if !req.ClearMetadata {
			md = maps.Clone(f.Metadata)
			if md == nil {
				md = map[string]string{}
			}
		}
		for k, v := range req.Metadata {
			if v == nil {
				delete(md, k)
			} else {
				md[k] = *v
			}
		}
		if len(md) > MaxMetadataKeys {
			return Fact{}, invalid("metadata", "would have %d keys (at most %d)", len(md), MaxMetadataKeys)
		}
		if len(md) == 0 {
			md = nil
		}
		next.Metadata = md
	}
	if req.ValidFrom != nil {
		if req.ValidFrom.IsZero() {
			return Fact{}, invalid("valid_from", "cannot be removed: every fact holds from some time")
		}
		next.ValidFrom = storedTime(*req.ValidFrom)
	}
	if req.ValidTo != nil {
		next.ValidTo = storedTime(*req.ValidTo)
		if next.ValidTo.IsZero() && !f.Valid() {
			return Fact{}, invalid("valid_to", "cannot be removed from a superseded fact (superseded by %.80q): it stopped holding when its successor began", f.SupersededBy)
		}
	}
	if (req.ValidFrom != nil || req.ValidTo != nil) && !next.ValidTo.IsZero() && !next.ValidTo.After(next.ValidFrom) {
		field := "valid_to"
		if req.ValidTo == nil {
			field = "valid_from"
		}
		return Fact{}, invalid(field, "valid_to %s is not after valid_from %s", next.ValidTo.Format(time.RFC3339Nano), next.ValidFrom.Format(time.RFC3339Nano))
	}
	after := next.State()
	if reflect.DeepEqual(before, after) {
		return f.Clone(), nil
	}
	*f = next
	b.dirty[f.ID] = true
	b.terms[i] = nil
	e := b.entry(f.ID, ActionUpdated, req.By, req.Reason)
	e.Before, e.After = before, after
	b.audit = append(b.audit, e)
	return f.Clone(), nil
}
