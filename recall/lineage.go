package recall

import (
	"context"
	"errors"
	"slices"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// A LineageFunc returns the spans of documents that make up a session's
// conversation as the session sees it, its own span first: for a branch,
// its turns after the fork point, then its parent's up to it, and so on
// up to the root. It returns no spans, or one, for a session that
// inherits nothing (or that it does not know): a search then filters on
// the session's metadata as asked.
type LineageFunc func(ctx context.Context, tenant, session string) ([]Span, error)

// StoreLineage is the LineageFunc of the sessions of st, whose documents
// StepDocs makes (their Group is the session's ID and their Seq the
// entry's): a session's spans are the segments of its log
// (store.Segmenter), each session's own entries indexed once, under it. A
// branch's history up to its fork point is then not indexed again for
// the branch (a Follower indexes nothing for a fork); when its parent is
// deleted, the store hands the parent's part to the branch as appends,
// which are indexed as the branch's. StoreLineage returns nil when st
// (or the store it wraps, see IndexedStore.Unwrap) does not implement
// store.Segmenter.
func StoreLineage(st store.Store) LineageFunc {
	for {
		if sg, ok := st.(store.Segmenter); ok {
			return segmentLineage(sg)
		}
		u, ok := st.(interface{ Unwrap() store.Store })
		if !ok {
			return nil
		}
		st = u.Unwrap()
	}
}

func segmentLineage(sg store.Segmenter) LineageFunc {
	return func(ctx context.Context, tenant, id string) ([]Span, error) {
		segs, err := sg.Segments(ctx, tenant, id)
		if errors.Is(err, agentmem.ErrNotFound) {
			return nil, nil // searched as asked: nothing to find
		}
		if err != nil {
			return nil, err
		}
		if len(segs) > MaxSpans {
			// The oldest turns of a chain of more than MaxSpans forks
			// are left out.
			segs = segs[:MaxSpans]
		}
		spans := make([]Span, len(segs))
		for i, g := range segs {
			spans[i] = Span{Group: g.Session, After: g.After, Through: g.Through}
		}
		return spans, nil
	}
}

// lineageView is the Backend a search scoped to a session with a lineage
// runs on: the ranking sees the session's conversation as one group (a
// turn's neighbours and the group's weight cross fork points), and a
// window around a turn of any of its spans is a window of the
// conversation. Documents keep their own IDs and groups.
type lineageView struct {
	Backend
	as    string // the session searched
	spans []Span // its lineage, the session's own span first
}

// asGroup presents matches of the lineage's spans as the session's.
func (v *lineageView) asGroup(ms []Match) []Match {
	for i := range ms {
		if ms[i].Group != "" && v.holds(ms[i].Group) {
			ms[i].Group = v.as
		}
	}
	return ms
}

func (v *lineageView) holds(group string) bool {
	return slices.ContainsFunc(v.spans, func(s Span) bool { return s.Group == group })
}

// Lexical implements Backend.
func (v *lineageView) Lexical(ctx context.Context, q LexicalQuery) ([]Match, error) {
	ms, err := v.Backend.Lexical(ctx, q)
	return v.asGroup(ms), err
}

// Vector implements Backend.
func (v *lineageView) Vector(ctx context.Context, q VectorQuery) ([]Match, error) {
	ms, err := v.Backend.Vector(ctx, q)
	return v.asGroup(ms), err
}

// Around implements Backend: around the session, or a group of its
// lineage, it returns the conversation's documents from each span, in
// Seq order (the spans hold disjoint runs of sequence numbers).
func (v *lineageView) Around(ctx context.Context, tenant, group string, from, to int64) ([]Doc, error) {
	if group != v.as && !v.holds(group) {
		return v.Backend.Around(ctx, tenant, group, from, to)
	}
	var out []Doc
	for _, s := range slices.Backward(v.spans) { // oldest turns first
		lo, hi := max(from, s.After+1), to
		if s.Through != 0 {
			hi = min(hi, s.Through)
		}
		if lo > hi {
			continue
		}
		docs, err := v.Backend.Around(ctx, tenant, s.Group, lo, hi)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	return out, nil
}
