package hierarchy

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
)

// This file is the package's only use of the recall index: the core and
// episodic tiers are documents of it.

// Metadata keys of the tiers' documents.
const (
	metaHierarchy  = "hierarchy" // the session the hierarchy belongs to
	metaTier       = "tier"
	metaItem       = "item"
	metaImportance = "importance"
	metaRecalls    = "recalls"
	metaCovers     = "covers"
)

// tierIndex keeps one hierarchy's core and episodic tiers in a recall index.
type tierIndex struct {
	ix      *recall.Index
	tenant  string
	session string
}

func (x tierIndex) group(t Tier) string { return x.session + "/" + string(t) }

func (x tierIndex) docID(t Tier, id string) string { return x.group(t) + "/" + id }

// put writes an item as a document of its tier, replacing an earlier one.
func (x tierIndex) put(ctx context.Context, it *Item) error {
	d := recall.Doc{
		ID:     x.docID(it.Tier, it.ID),
		Tenant: x.tenant,
		Text:   it.Text,
		Group:  x.group(it.Tier),
		Seq:    int64(it.first()),
		Time:   it.Time,
		Metadata: map[string]string{
			metaHierarchy:  x.session,
			metaTier:       string(it.Tier),
			metaItem:       it.ID,
			metaImportance: formatImportance(it.Importance),
			metaRecalls:    strconv.Itoa(it.Recalls),
			metaCovers:     encodeRanges(it.Covers),
		},
	}
	return x.ix.Upsert(ctx, d)
}

// remove deletes an item's document from a tier.
func (x tierIndex) remove(ctx context.Context, t Tier, id string) error {
	_, err := x.ix.Delete(ctx, x.tenant, x.docID(t, id))
	return err
}

// load returns every item of a tier, in order of the first step covered.
func (x tierIndex) load(ctx context.Context, t Tier) ([]*Item, error) {
	docs, err := x.ix.Backend().Around(ctx, x.tenant, x.group(t), 0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	items := make([]*Item, 0, len(docs))
	for _, d := range docs {
		it, err := itemFromDoc(d)
		if err != nil {
			return nil, fmt.Errorf("hierarchy: document %q: %w", d.ID, err)
		}
		if it.Tier != t {
			return nil, fmt.Errorf("hierarchy: document %q: %w", d.ID,
				&agentmem.InvalidError{Field: metaTier, Reason: fmt.Sprintf("is %q in group %q", it.Tier, x.group(t))})
		}
		items = append(items, it)
	}
	return items, nil
}

// search returns the IDs of the k episodic items most relevant to query,
// best first. The index ranks them: BM25, fused with vectors when the
// index has an embedder.
func (x tierIndex) search(ctx context.Context, query string, k int) ([]string, error) {
	hits, err := x.ix.Search(ctx, recall.Query{
		Tenant: x.tenant,
		Text:   query,
		K:      k,
		Filter: recall.Filter{Metadata: map[string]string{metaHierarchy: x.session, metaTier: string(Episodic)}},
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Doc.Metadata[metaItem]
	}
	return ids, nil
}

// itemFromDoc decodes an item from its document, refusing documents this
// package did not write (missing or malformed metadata) with an
// *agentmem.InvalidError.
func itemFromDoc(d recall.Doc) (*Item, error) {
	md := d.Metadata
	it := &Item{ID: md[metaItem], Tier: Tier(md[metaTier]), Text: d.Text, Time: d.Time}
	if it.ID == "" {
		return nil, &agentmem.InvalidError{Field: metaItem, Reason: "is missing"}
	}
	if it.Tier != Core && it.Tier != Episodic {
		return nil, &agentmem.InvalidError{Field: metaTier, Reason: fmt.Sprintf("%q is not core or episodic", it.Tier)}
	}
	var err error
	if it.Importance, err = parseImportance(md[metaImportance]); err != nil {
		return nil, err
	}
	if s := md[metaRecalls]; s != "" {
		if it.Recalls, err = strconv.Atoi(s); err != nil || it.Recalls < 0 {
			return nil, &agentmem.InvalidError{Field: metaRecalls, Reason: fmt.Sprintf("%q is not a count", s)}
		}
	}
	if it.Covers, err = decodeRanges(md[metaCovers]); err != nil {
		return nil, err
	}
	return it, nil
}
