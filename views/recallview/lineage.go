package recallview

import (
	"context"
	"errors"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
)

// StoreLineage is the LineageFunc of the sessions of st, whose documents
// StepDocs makes: their Group is the session's ID and their Seq the
// entry's. A session's spans are the segments of its log
// (store.Segmenter), each session's own entries indexed once, under it. A
// branch's history up to its fork point is then not indexed again for
// the branch: a Follower indexes nothing for a fork. When its parent is
// deleted, the store hands the parent's part to the branch as appends,
// which are indexed as the branch's. StoreLineage returns nil when st
// does not implement store.Segmenter.
func StoreLineage(st *store.Store) recall.LineageFunc {
	if st.Supports(store.CanSegment) {
		return segmentLineage(st)
	}
	return nil
}

func segmentLineage(sg store.Segmenter) recall.LineageFunc {
	return func(ctx context.Context, tenant, id string) ([]recall.Span, error) {
		segs, err := sg.Segments(ctx, tenant, id)
		if errors.Is(err, agentmem.ErrNotFound) {
			return nil, nil // searched as asked: nothing to find
		}
		if err != nil {
			return nil, err
		}
		if len(segs) > recall.MaxSpans {
			// The oldest turns of a chain of more than MaxSpans forks
			// are left out.
			segs = segs[:recall.MaxSpans]
		}
		spans := make([]recall.Span, len(segs))
		for i, g := range segs {
			spans[i] = recall.Span{Group: g.Session, After: g.After, Through: g.Through}
		}
		return spans, nil
	}
}
