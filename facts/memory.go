package facts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/agentmem/agentmem"
)

// Defaults of Options. They are deliberately gentle, since a decay so
// steep that it drives recall to zero on old corpora is a known failure.
// An unreinforced fact added at DefaultConfidence stays above
// DefaultInjectThreshold for about 2.3 half-lives (seven months). It
// never falls below DefaultFloor, so search still finds it.
const (
	DefaultHalfLife        = 90 * 24 * time.Hour
	DefaultFloor           = 0.2
	DefaultConfidence      = 0.7
	DefaultGain            = 0.3
	DefaultInjectThreshold = 0.3
	// DefaultSimilarity is the lexical similarity (the cosine of the
	// texts' analyzed term counts) at or above which a new fact is taken
	// for one already known, and reinforces it instead of being added.
	DefaultSimilarity = 0.85
	// DefaultEmbeddingSimilarity is the same threshold for the cosine of
	// two embeddings, used when both facts have one.
	DefaultEmbeddingSimilarity = 0.92
)

// Options configures a Memory. The zero value is a good default: every
// zero field takes the default named in its comment.
type Options struct {
	// Clock returns the current time; nil means time.Now. Times are kept
	// to the microsecond, in UTC, as every backend stores them.
	Clock func() time.Time
	// Decay is how confidence fades; the zero Decay means
	// {DefaultHalfLife, DefaultFloor}. A negative HalfLife turns decay
	// off.
	Decay Decay
	// DefaultConfidence is the confidence of a fact remembered with
	// Confidence 0; zero means DefaultConfidence.
	DefaultConfidence float64
	// Gain is how much one reinforcement raises confidence: c becomes
	// c + (1 − c)·Gain, where c is the larger of the fact's effective
	// confidence and the new observation's. Zero means DefaultGain.
	Gain float64
	// InjectThreshold is the effective confidence below which a fact is
	// not injected into prompts (it can still be searched). Zero means
	// DefaultInjectThreshold.
	InjectThreshold float64
	// Similarity is the lexical similarity in (0, 1] at or above which two
	// texts are the same fact; zero means DefaultSimilarity.
	Similarity float64
	// Embedder, when set, embeds every new fact and every search query:
	// relevance is then the cosine of the vectors, and two facts whose
	// vectors' cosine reaches EmbeddingSimilarity are the same fact.
	Embedder agentmem.Embedder
	// EmbeddingSimilarity is the cosine threshold used with Embedder;
	// zero means DefaultEmbeddingSimilarity.
	EmbeddingSimilarity float64
}

// withDefaults returns o with its zero fields set to the defaults.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Decay == (Decay{}) {
		o.Decay = Decay{HalfLife: DefaultHalfLife, Floor: DefaultFloor}
	}
	if o.DefaultConfidence == 0 {
		o.DefaultConfidence = DefaultConfidence
	}
	if o.Gain == 0 {
		o.Gain = DefaultGain
	}
	if o.InjectThreshold == 0 {
		o.InjectThreshold = DefaultInjectThreshold
	}
	if o.Similarity == 0 {
		o.Similarity = DefaultSimilarity
	}
	if o.EmbeddingSimilarity == 0 {
		o.EmbeddingSimilarity = DefaultEmbeddingSimilarity
	}
	return o
}

// Memory is the user-facts memory: a Store under a policy (clock, decay,
// reinforcement, similarity, thresholds). It is safe for concurrent use,
// and so are several Memories, in several processes, over one database.
// Each change of a user's facts is one Store.Update, which the backend
// serializes per user, so concurrent extractions of the same fact
// reinforce one fact rather than add two.
type Memory struct {
	store Store
	opts  Options
	bg    *background // the extractions Wrap runs after its calls return
}

// New returns a Memory over st. It panics if st is nil.
func New(st Store, opts Options) *Memory {
	if st == nil {
		panic("facts: New needs a Store")
	}
	o := opts.withDefaults()
	return &Memory{store: st, opts: o, bg: newBackground()}
}

// Store returns the Memory's Store.
func (m *Memory) Store() Store { return m.store }

// Options returns the Memory's options, defaults filled in.
func (m *Memory) Options() Options { return m.opts }

// now returns the clock's time as the backends keep it.
func (m *Memory) now() time.Time { return m.opts.Clock().UTC().Truncate(time.Microsecond) }

// Confidence returns f's effective confidence now.
func (m *Memory) Confidence(f Fact) float64 { return m.opts.Decay.Effective(f, m.opts.Clock()) }

// Outcome is what a change did.
type Outcome string

// The outcomes of Remember, Supersede and Apply.
const (
	// OutcomeAdded: a new fact was recorded.
	OutcomeAdded Outcome = "added"
	// OutcomeReinforced: the fact was already known (by similarity) and
	// was reinforced instead.
	OutcomeReinforced Outcome = "reinforced"
	// OutcomeSuperseded: the old fact was marked superseded, and Fact is
	// its successor (new, or an existing fact that says the same, which
	// is then reinforced).
	OutcomeSuperseded Outcome = "superseded"
	// OutcomeIgnored: nothing was written: an "ignore" decision, or a
	// replay of a fact already learnt from the same source.
	OutcomeIgnored Outcome = "ignored"
)

// Result reports one change.
type Result struct {
	Outcome Outcome `json:"outcome"`
	// Fact is the fact added, reinforced or (for Superseded) the
	// successor, as written; zero for an ignore decision.
	Fact Fact `json:"fact,omitzero"`
	// Previous is, for Superseded, the old fact as written (now
	// superseded).
	Previous *Fact `json:"previous,omitempty"`
}

// RememberRequest asks Memory.Remember to record a fact.
type RememberRequest struct {
	Tenant string
	UserID string
	// Text is the fact, one self-contained statement about the user.
	Text string
	// Confidence in [0, 1]; 0 means Options.DefaultConfidence.
	Confidence float64
	Source     Source
	Metadata   map[string]string
	// ValidFrom is when the fact became true in the world; zero means
	// when it is recorded.
	ValidFrom time.Time
	// ValidTo is when it stopped being true, after ValidFrom; zero means
	// it still is.
	ValidTo time.Time
}

// validity checks the event times of a request and returns them as
// stored (UTC, microseconds): valid_to, when set, must be after
// valid_from (or after now when valid_from is not given).
func (m *Memory) validity(from, to time.Time) (validity, error) {
	v := validity{From: storedTime(from), To: storedTime(to)}
	start := v.From
	if start.IsZero() {
		start = m.now()
	}
	if !v.To.IsZero() && !v.To.After(start) {
		what := "valid_from"
		if v.From.IsZero() {
			what = "now (valid_from's default)"
		}
		return v, invalid("valid_to", "%s is not after %s %s", v.To.Format(time.RFC3339Nano), what, start.Format(time.RFC3339Nano))
	}
	return v, nil
}

// storedTime returns t as the backends keep it: UTC, to the microsecond;
// zero stays zero.
func storedTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// Remember records a fact about a user, or reinforces the valid fact that
// says the same (see Options.Similarity) and holds at some time of the
// request's validity, and returns which it did. If a fact that says the
// same was already learnt from the same source (a non-empty
// Source.SessionID, same step), the call is a replay and is Ignored. Bad
// input is an *agentmem.InvalidError and nothing is written.
func (m *Memory) Remember(ctx context.Context, req RememberRequest) (Result, error) {
	if err := ValidateUser(req.Tenant, req.UserID); err != nil {
		return Result{}, err
	}
	op := Decision{Op: OpAdd, Text: req.Text, Confidence: req.Confidence}
	if err := op.validate("", req.Source, req.Metadata); err != nil {
		return Result{}, err
	}
	v, err := m.validity(req.ValidFrom, req.ValidTo)
	if err != nil {
		return Result{}, err
	}
	vecs, err := m.embedTexts(ctx, []string{req.Text})
	if err != nil {
		return Result{}, err
	}
	var res Result
	err = m.store.Update(ctx, req.Tenant, req.UserID, func(current []Fact) (Changes, error) {
		b := m.newBatch(req.Tenant, req.UserID, current, vecs)
		res = b.remember(req.Text, req.Confidence, req.Source, req.Metadata, v)
		return b.changes(), nil
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// SupersedeRequest asks Memory.Supersede to replace a fact that was
// contradicted.
type SupersedeRequest struct {
	Tenant string
	// ID is the fact that is no longer true.
	ID string
	// Text is what is true instead.
	Text       string
	Confidence float64 // 0 means Options.DefaultConfidence
	Source     Source
	Metadata   map[string]string
	// ValidFrom is when the new fact became true (zero: now), and so
	// when the old one stopped; ValidTo is when the new one stops (zero:
	// it still holds).
	ValidFrom, ValidTo time.Time
	// By and Reason go into the audit log.
	By, Reason string
}

// Supersede marks the fact req.ID superseded by a new fact with req.Text
// (or, if a valid fact of the user already says that, by that fact, which
// is reinforced) and records it in the audit log. The old fact is kept,
// linked to its successor, and closed: its ValidTo becomes the new fact's
// ValidFrom (now by default) unless it was closed earlier, so it still
// answers as-of queries for its period. A fact already superseded is an
// error wrapping agentmem.ErrConflict that names its successor; a missing
// one wraps agentmem.ErrNotFound.
func (m *Memory) Supersede(ctx context.Context, req SupersedeRequest) (Result, error) {
	if err := checkField("id", req.ID, MaxFieldBytes, true); err != nil {
		return Result{}, err
	}
	op := Decision{Op: OpSupersede, FactID: req.ID, Text: req.Text, Confidence: req.Confidence}
	if err := op.validate("", req.Source, req.Metadata); err != nil {
		return Result{}, err
	}
	if err := checkAuditText(req.By, req.Reason, false); err != nil {
		return Result{}, err
	}
	v, err := m.validity(req.ValidFrom, req.ValidTo)
	if err != nil {
		return Result{}, err
	}
	old, err := m.store.Get(ctx, req.Tenant, req.ID)
	if err != nil {
		return Result{}, err
	}
	vecs, err := m.embedTexts(ctx, []string{req.Text})
	if err != nil {
		return Result{}, err
	}
	var res Result
	err = m.store.Update(ctx, req.Tenant, old.UserID, func(current []Fact) (Changes, error) {
		b := m.newBatch(req.Tenant, old.UserID, current, vecs)
		r, err := b.supersede(req.ID, req.Text, req.Confidence, req.Source, req.Metadata, req.By, req.Reason, false, v)
		res = r
		return b.changes(), err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// checkAuditText checks the by and reason of an audited action.
func checkAuditText(by, reason string, required bool) error {
	if err := checkField("by", by, MaxFieldBytes, required); err != nil {
		return err
	}
	return checkField("reason", reason, MaxReasonBytes, required)
}

// Forget deletes a fact (valid or superseded) for good and records who
// forgot it, when and why in the user's audit log; by and reason are
// required. The audit entry keeps no text, only its SHA-256 digest. A
// successor link from an older fact to the forgotten one is left as it
// is, so the chain shows that something replaced it. A missing fact wraps
// agentmem.ErrNotFound.
func (m *Memory) Forget(ctx context.Context, tenant, id, by, reason string) error {
	if err := checkField("id", id, MaxFieldBytes, true); err != nil {
		return err
	}
	if err := checkAuditText(by, reason, true); err != nil {
		return err
	}
	f, err := m.store.Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	return m.store.Update(ctx, tenant, f.UserID, func(current []Fact) (Changes, error) {
		b := m.newBatch(tenant, f.UserID, current, nil)
		err := b.forget(id, by, reason)
		return b.changes(), err
	})
}

// ForgetUser forgets every fact of the user, valid or superseded, in one
// Store.Update, as Forget forgets one. Each gets an audit entry of who,
// when, why and the digest of its text. Its text is erased from its
// earlier entries. It returns how many facts were forgotten; a user with
// none forgets none, so a repeated call is harmless. by and reason are
// required.
func (m *Memory) ForgetUser(ctx context.Context, tenant, userID, by, reason string) (int, error) {
	if err := ValidateUser(tenant, userID); err != nil {
		return 0, err
	}
	if err := checkAuditText(by, reason, true); err != nil {
		return 0, err
	}
	var n int
	err := m.store.Update(ctx, tenant, userID, func(current []Fact) (Changes, error) {
		b := m.newBatch(tenant, userID, current, nil)
		for _, f := range current {
			if err := b.forget(f.ID, by, reason); err != nil {
				return Changes{}, err
			}
		}
		n = len(current)
		return b.changes(), nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Get returns a fact by ID, or an error wrapping agentmem.ErrNotFound.
func (m *Memory) Get(ctx context.Context, tenant, id string) (Fact, error) {
	return m.store.Get(ctx, tenant, id)
}

// List returns the user's facts that hold now, oldest first, or every
// fact, superseded and closed ones too, when includeSuperseded is set.
// It is ListFacts with only these fields.
func (m *Memory) List(ctx context.Context, tenant, userID string, includeSuperseded bool) ([]Fact, error) {
	return m.ListFacts(ctx, ListRequest{Tenant: tenant, UserID: userID, IncludeSuperseded: includeSuperseded})
}

// ListRequest asks Memory.ListFacts for some of a user's facts.
type ListRequest struct {
	Tenant string
	UserID string
	// IncludeSuperseded lists every fact recorded, whatever its validity;
	// without it (and without AsOf), only the facts that hold now.
	IncludeSuperseded bool
	// AsOf, when set, lists the facts that held at that time
	// (ValidFrom ≤ AsOf < ValidTo), superseded or not, as the memory
	// knows them now: event time, not record time. It excludes
	// IncludeSuperseded.
	AsOf time.Time
	// Metadata keeps only the facts whose metadata has every one of these
	// entries (exact match); at most MaxMetadataFilters.
	Metadata map[string]string
}

// check checks the request.
func (r ListRequest) check() error {
	if err := ValidateUser(r.Tenant, r.UserID); err != nil {
		return err
	}
	if !r.AsOf.IsZero() && r.IncludeSuperseded {
		return invalid("as_of", "lists the facts that held at a time; include_superseded lists every fact: give one or the other")
	}
	return CheckMetadataFilter(r.Metadata)
}

// ListFacts returns the user's facts the request selects, oldest first.
// Bad input is an *agentmem.InvalidError.
func (m *Memory) ListFacts(ctx context.Context, req ListRequest) ([]Fact, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	fs, err := m.store.Facts(ctx, req.Tenant, req.UserID)
	if err != nil {
		return nil, err
	}
	at := req.AsOf
	if at.IsZero() {
		at = m.now()
	}
	return slices.DeleteFunc(fs, func(f Fact) bool {
		return (!req.IncludeSuperseded && !f.HoldsAt(at)) || !f.matchesMetadata(req.Metadata)
	}), nil
}

// EditRequest asks Memory.Edit to change a fact. A nil field is left as
// it is.
type EditRequest struct {
	Tenant string
	// ID is the fact to change.
	ID string
	// Text replaces the fact's text (re-embedded with the Embedder).
	Text *string
	// Confidence replaces the base confidence as of now: decay restarts
	// from the edit (it is not counted as a reinforcement).
	Confidence *float64
	// ClearMetadata removes every metadata entry, before Metadata is
	// merged.
	ClearMetadata bool
	// Metadata is merged into the fact's metadata: a key with a nil value
	// is removed, others are set.
	Metadata map[string]*string
	// ValidFrom replaces when the fact became true.
	ValidFrom *time.Time
	// ValidTo replaces when it stopped being true; a zero time reopens
	// the fact (it still holds), which a superseded fact cannot be.
	ValidTo *time.Time
	// By and Reason go into the audit log.
	By, Reason string
}

// Edit changes a fact in place, keeping its ID, and records the change,
// before and after, in the user's audit log (see Changelog). An edit that
// changes nothing writes nothing. A missing fact wraps
// agentmem.ErrNotFound; bad input is an *agentmem.InvalidError naming
// the field, and nothing is written.
func (m *Memory) Edit(ctx context.Context, req EditRequest) (Fact, error) {
	if err := checkField("id", req.ID, MaxFieldBytes, true); err != nil {
		return Fact{}, err
	}
	if req.Text != nil {
		if err := checkText("text", *req.Text); err != nil {
			return Fact{}, err
		}
	}
	if req.Confidence != nil {
		if err := checkConfidence("confidence", *req.Confidence); err != nil {
			return Fact{}, err
		}
	}
	if len(req.Metadata) > MaxMetadataKeys {
		return Fact{}, invalid("metadata", "has %d keys (at most %d)", len(req.Metadata), MaxMetadataKeys)
	}
	for k, v := range req.Metadata {
		if err := checkField("metadata key", k, MaxFieldBytes, true); err != nil {
			return Fact{}, err
		}
		if v != nil {
			if err := checkField(fmt.Sprintf("metadata[%q]", k), *v, MaxFieldBytes, false); err != nil {
				return Fact{}, err
			}
		}
	}
	if err := checkAuditText(req.By, req.Reason, false); err != nil {
		return Fact{}, err
	}
	f, err := m.store.Get(ctx, req.Tenant, req.ID)
	if err != nil {
		return Fact{}, err
	}
	var vecs map[string][]float32
	if req.Text != nil && *req.Text != f.Text {
		if vecs, err = m.embedTexts(ctx, []string{*req.Text}); err != nil {
			return Fact{}, err
		}
	}
	var out Fact
	err = m.store.Update(ctx, req.Tenant, f.UserID, func(current []Fact) (Changes, error) {
		b := m.newBatch(req.Tenant, f.UserID, current, vecs)
		var err error
		out, err = b.edit(req)
		return b.changes(), err
	})
	if err != nil {
		return Fact{}, err
	}
	return out, nil
}

// Changelog returns the entries of the user's audit log about the fact
// id, oldest first: its addition, edits, supersession and forgetting.
// Each says who, when and why, and what the fact said before and after,
// but nothing of what a forgotten fact said. Reinforcements are not in
// it: they are counted in Fact.Reinforcements. A fact with no entry for
// this user is an error wrapping agentmem.ErrNotFound.
func (m *Memory) Changelog(ctx context.Context, tenant, userID, id string) ([]AuditEntry, error) {
	if err := ValidateUser(tenant, userID); err != nil {
		return nil, err
	}
	if err := checkField("id", id, MaxFieldBytes, true); err != nil {
		return nil, err
	}
	all, err := m.store.Audit(ctx, tenant, userID)
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(all, func(e AuditEntry) bool { return e.FactID != id })
	if len(out) == 0 {
		return nil, fmt.Errorf("facts: fact %.80q of user %.80q: %w", id, userID, agentmem.ErrNotFound)
	}
	return out, nil
}

// History returns the supersession chain the fact id belongs to, oldest
// first: the facts it replaced, itself, and its successors up to the
// valid one (or up to a successor that was forgotten).
func (m *Memory) History(ctx context.Context, tenant, id string) ([]Fact, error) {
	f, err := m.store.Get(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	all, err := m.store.Facts(ctx, tenant, f.UserID)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]Fact, len(all))
	pred := make(map[string]string, len(all))
	for _, g := range all {
		byID[g.ID] = g
		if g.SupersededBy != "" {
			pred[g.SupersededBy] = g.ID // a fact has at most one predecessor
		}
	}
	var back []Fact
	for p, ok := pred[id]; ok && len(back) < len(all); p, ok = pred[p] {
		back = append(back, byID[p])
	}
	slices.Reverse(back)
	chain := append(back, f)
	for next := f.SupersededBy; next != "" && len(chain) <= len(all); {
		g, ok := byID[next]
		if !ok {
			break
		}
		chain = append(chain, g)
		next = g.SupersededBy
	}
	return chain, nil
}

// Audit returns the user's audit log, oldest first.
func (m *Memory) Audit(ctx context.Context, tenant, userID string) ([]AuditEntry, error) {
	if err := ValidateUser(tenant, userID); err != nil {
		return nil, err
	}
	return m.store.Audit(ctx, tenant, userID)
}

// embedTexts embeds texts with the Embedder, if any, and returns the
// vectors by text.
func (m *Memory) embedTexts(ctx context.Context, texts []string) (map[string][]float32, error) {
	if m.opts.Embedder == nil || len(texts) == 0 {
		return nil, nil
	}
	vs, err := m.opts.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("facts: embedding: %w", err)
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("facts: embedding: %d vectors for %d texts", len(vs), len(texts))
	}
	out := make(map[string][]float32, len(texts))
	for i, t := range texts {
		for _, x := range vs[i] {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, errors.New("facts: embedding: the embedder returned a NaN or an infinity")
			}
		}
		out[t] = vs[i]
	}
	return out, nil
}
