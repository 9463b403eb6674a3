package recall

import (
	"cmp"
	"context"
	"slices"
)

// A LineageFunc returns the spans of documents that make up a session's
// conversation as the session sees it, its own span first. For a branch
// they are its turns after the fork point, then its parent's up to it,
// and so on up to the root. It returns no spans, or one, for a session that
// inherits nothing (or that it does not know): a search then filters on
// the session's metadata as asked.
type LineageFunc func(ctx context.Context, tenant, session string) ([]Span, error)

// Lineage returns the index's Options.Lineage: nil when the index does
// not resolve sessions' lineage, and a branch's inherited history must
// then be indexed again as the branch's.
func (ix *Index) Lineage() LineageFunc { return ix.opts.Lineage }

// lineageView is the Backend a search scoped to a session with a lineage
// runs on. The ranking sees the session's conversation as one group: a
// turn's neighbours and the group's weight cross fork points. A window
// around a turn of any of its spans is a window of the conversation.
// Documents keep their own IDs and groups.
//
// A session may hold documents of turns it inherited. An amendment in
// its own log of an inherited step (a tool's result sent to a branch for
// a call its parent left pending) is indexed under the session, at the
// step's number. An index written without lineage may hold copies of its
// whole inherited history too. Such a document is the session's view of
// the turn, so for each turn the nearest session of the lineage that
// holds a document of it wins. A search reaches every span's documents
// from the first turn, and drops a match that a nearer span shadows.
type lineageView struct {
	Backend
	under Capabilities // the backend's
	as    string       // the session searched
	spans []Span       // its lineage, the session's own span first, each from the first turn
}

// newLineageView returns the view of the session as's lineage, spans as
// LineageFunc returns them, over a backend and its capabilities.
func newLineageView(b Backend, caps Capabilities, as string, spans []Span) *lineageView {
	reach := make([]Span, len(spans))
	for i, s := range spans {
		reach[i] = Span{Group: s.Group, Through: s.Through}
	}
	return &lineageView{Backend: b, under: caps, as: as, spans: reach}
}

// caps returns the view's capabilities: the backend's, its searches seen
// through the view.
func (v *lineageView) caps() Capabilities {
	c := v.under
	if c.Lexical != nil {
		c.Lexical = v
	}
	if c.Vector != nil {
		c.Vector = v
	}
	return c
}

// span returns the index of the nearest span of group, or -1.
func (v *lineageView) span(group string) int {
	return slices.IndexFunc(v.spans, func(s Span) bool { return s.Group == group })
}

// holds reports whether group is one of the lineage's.
func (v *lineageView) holds(group string) bool { return v.span(group) >= 0 }

// visible drops the matches that a nearer span shadows (it holds a
// document of the same turn that is in it: made before that span ends),
// and presents the rest as the session's. An ancestor's document made
// after the fork point (its amendment of a turn the session inherited
// before it: a tool's result the session never had) is not in its span
// (Span), so the backend has left it out. Documents are recallview.StepDocs': a
// session's document of turn n is "<session>#n".
func (v *lineageView) visible(ctx context.Context, tenant string, ms []Match) ([]Match, error) {
	var ids []string
	for _, m := range ms {
		for _, s := range v.spans[:max(v.span(m.Group), 0)] {
			ids = append(ids, s.Group+"#"+seqString(m.Seq))
		}
	}
	// An ID too long to be a document's names none.
	ids = slices.DeleteFunc(ids, func(id string) bool { return CheckID(id) != nil })
	if len(ids) > 0 {
		slices.Sort(ids)
		docs, err := v.Backend.Get(ctx, tenant, slices.Compact(ids)...)
		if err != nil {
			return nil, err
		}
		if len(docs) > 0 {
			held := make(map[string]int64, len(docs)) // ID: entry
			for i := range docs {
				held[docs[i].ID] = EntrySeq(&docs[i])
			}
			ms = slices.DeleteFunc(ms, func(m Match) bool {
				return slices.ContainsFunc(v.spans[:max(v.span(m.Group), 0)], func(s Span) bool {
					entry, ok := held[s.Group+"#"+seqString(m.Seq)]
					return ok && s.holdsEntry(entry)
				})
			})
		}
	}
	for i := range ms {
		if ms[i].Group != "" && v.holds(ms[i].Group) {
			ms[i].Group = v.as
		}
	}
	return ms, nil
}

// DocFreqs implements LexicalSearcher: the tenant's statistics.
func (v *lineageView) DocFreqs(ctx context.Context, tenant string, terms []string) (DocStats, error) {
	return v.under.Lexical.DocFreqs(ctx, tenant, terms)
}

// Lexical implements LexicalSearcher.
func (v *lineageView) Lexical(ctx context.Context, q LexicalQuery) ([]Match, error) {
	ms, err := v.under.Lexical.Lexical(ctx, q)
	if err != nil {
		return nil, err
	}
	return v.visible(ctx, q.Tenant, ms)
}

// Vector implements VectorSearcher.
func (v *lineageView) Vector(ctx context.Context, q VectorQuery) ([]Match, error) {
	ms, err := v.under.Vector.Vector(ctx, q)
	if err != nil {
		return nil, err
	}
	return v.visible(ctx, q.Tenant, ms)
}

// Around implements Backend: around the session, or a group of its
// lineage, it returns the conversation's documents, in Seq order, each
// turn's from the nearest span that holds one.
func (v *lineageView) Around(ctx context.Context, tenant, group string, from, to int64) ([]Doc, error) {
	if group != v.as && !v.holds(group) {
		return v.Backend.Around(ctx, tenant, group, from, to)
	}
	var out []Doc
	taken := map[int64]bool{}
	for _, s := range v.spans { // nearest first
		hi := to
		if s.Through != 0 {
			hi = min(hi, s.Through)
		}
		if from > hi {
			continue
		}
		docs, err := v.Backend.Around(ctx, tenant, s.Group, from, hi)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if !taken[d.Seq] && s.holdsDoc(&d) {
				taken[d.Seq] = true
				out = append(out, d)
			}
		}
	}
	slices.SortFunc(out, func(a, b Doc) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}
