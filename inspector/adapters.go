package inspector

import (
	"context"
	"strconv"
	"time"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
)

// FactsFrom returns the FactsSource of a facts.Memory: every fact of the
// user, superseded ones included, with its decay curve under the
// Memory's policy. It is a FactHistorySource: each fact's changes are
// those of the user's audit log (facts.Memory.Changelog).
func FactsFrom(m *facts.Memory) FactsSource { return factsSource{m} }

type factsSource struct{ m *facts.Memory }

func (s factsSource) List(ctx context.Context, tenant, user string) ([]FactView, error) {
	fs, err := s.m.List(ctx, tenant, user, true)
	if err != nil {
		return nil, err
	}
	decay := s.m.Options().Decay
	out := make([]FactView, 0, len(fs))
	for _, f := range fs {
		f := f
		out = append(out, FactView{
			ID: f.ID, Text: f.Text, Confidence: f.Confidence,
			CreatedAt: f.CreatedAt, ReinforcedAt: f.ReinforcedAt, Reinforcements: f.Reinforcements,
			Superseded: !f.Valid(), SupersededBy: f.SupersededBy, SupersededAt: f.SupersededAt, ValidFrom: f.ValidFrom, ValidTo: f.ValidTo,
			EffectiveAt: func(t time.Time) float64 { return decay.Effective(f, t) },
		})
	}
	return out, nil
}

func (s factsSource) Changes(ctx context.Context, tenant, user, id string) ([]FactChangeView, error) {
	log, err := s.m.Changelog(ctx, tenant, user, id)
	if err != nil {
		return nil, err
	}
	state := func(st *facts.FactState) *FactStateView {
		if st == nil {
			return nil
		}
		return &FactStateView{Text: st.Text, Confidence: st.Confidence, ValidFrom: st.ValidFrom, ValidTo: st.ValidTo}
	}
	out := make([]FactChangeView, 0, len(log))
	for _, e := range log {
		out = append(out, FactChangeView{Action: string(e.Action), By: e.By, Reason: e.Reason, At: e.At,
			Successor: e.Successor, Before: state(e.Before), After: state(e.After)})
	}
	return out, nil
}

// RecallFrom returns the RecallSource of a recall.Index. It searches the
// tenant's index (every session's turns and any other document), or one
// session's, user's or agent's turns.
func RecallFrom(ix *recall.Index) RecallSource { return recallSource{ix} }

type recallSource struct{ ix *recall.Index }

func (s recallSource) Search(ctx context.Context, tenant, query, scope string, k int) ([]HitView, error) {
	f, err := recall.ParseScope(scope)
	if err != nil {
		return nil, err
	}
	hits, err := s.ix.Search(ctx, recall.Query{Tenant: tenant, Text: query, K: k, Filter: f})
	if err != nil {
		return nil, err
	}
	out := make([]HitView, 0, len(hits))
	for _, h := range hits {
		v := HitView{ID: h.Doc.ID, Text: h.Doc.Text, Score: h.Score, Time: h.Doc.Time,
			SessionID: h.Doc.Metadata[recall.MetaSession], UserID: h.Doc.Metadata[recall.MetaUser]}
		if step, err := strconv.ParseInt(h.Doc.Metadata[recall.MetaStep], 10, 64); err == nil && v.SessionID != "" {
			v.Seq = step
		}
		out = append(out, v)
	}
	return out, nil
}
