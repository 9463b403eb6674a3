package episodic

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views/recallview"
)

// This file is the package's only use of the recall index: an episode's
// steps, summary and metadata are documents, searched for relevance.

const (
	docPattern = "pattern" // metadata key marking the documents of episodes
	docPrefix  = "ep/"     // so that a conversation Indexer's documents of the same session are distinct
	metaSeq    = 0         // the Seq of an episode's metadata document
)

// episodeIndex keeps episodes in a recall index, for one scope.
type episodeIndex struct {
	ix            *recall.Index
	tenant        string
	user, agent   string
	candidateCap  int
	snippetsOfHit int
}

// docs returns the documents of a session's log entries (see
// recallview.StepDocs), marked as an episode's.
func (x episodeIndex) docs(sess *store.Session, entries ...store.Entry) []recall.Doc {
	var out []recall.Doc
	for _, e := range entries {
		for _, d := range recallview.StepDocs(sess, e) {
			d.ID = docPrefix + d.ID
			d.Metadata[docPattern] = "episode"
			out = append(out, d)
		}
	}
	return out
}

// metaDoc returns the document of an episode's metadata (its values, such
// as a title). So an episode is found by what it was about.
func (x episodeIndex) metaDoc(sess *store.Session, meta map[string]string, ep *Episode) (recall.Doc, bool) {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		parts = append(parts, meta[k])
	}
	if len(parts) == 0 {
		return recall.Doc{}, false
	}
	md := scopeMeta(sess.ID, sess.UserID, sess.Agent)
	return recall.Doc{ID: docPrefix + sess.ID + "#meta", Tenant: sess.Tenant, Text: strings.Join(parts, "\n"),
		Group: sess.ID, Seq: metaSeq, Time: ep.Started, Metadata: md}, true
}

// put writes documents (idempotent).
func (x episodeIndex) put(ctx context.Context, docs []recall.Doc) error {
	if len(docs) == 0 {
		return nil
	}
	return x.ix.Upsert(ctx, docs...)
}

// hit is one episode a search found, with its matching documents' texts.
type hit struct {
	session string
	matches []string
}

// search returns up to k episodes of the scope whose documents are most
// relevant to query, best first by their best document. It asks the index
// for more documents until k episodes are found or it has no more.
func (x episodeIndex) search(ctx context.Context, query string, k int) ([]hit, error) {
	f := recall.Filter{Metadata: scopeMeta("", x.user, x.agent)}
	want := min(8*k, x.candidateCap)
	for {
		hits, err := x.ix.Search(ctx, recall.Query{Tenant: x.tenant, Text: query, K: want, Filter: f})
		if err != nil {
			return nil, err
		}
		var out []hit
		at := map[string]int{}
		for _, h := range hits {
			i, ok := at[h.Doc.Group]
			if !ok {
				if len(out) == k {
					continue
				}
				i = len(out)
				at[h.Doc.Group] = i
				out = append(out, hit{session: h.Doc.Group})
			}
			if len(out[i].matches) < x.snippetsOfHit {
				out[i].matches = append(out[i].matches, h.Doc.Text)
			}
		}
		if len(out) == k || len(hits) < want || want >= x.candidateCap {
			return out, nil
		}
		want = min(4*want, x.candidateCap)
	}
}

// scopeMeta returns the metadata pairs of a conversation scope (see
// recall.Scope) plus the episode marker.
func scopeMeta(session, user, agent string) map[string]string {
	md := map[string]string{docPattern: "episode"}
	for k, v := range recall.Scope(session, user, agent).Metadata {
		md[k] = v
	}
	return md
}
