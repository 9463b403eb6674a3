package recall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/agentmem/agentmem/internal/registry"
)

// Backend stores documents: the one capability every recall backend has.
// What else a backend can do is discovered once, by CapabilitiesOf, and
// makes the Capabilities an Index searches with. They are a lexical
// search (LexicalSearcher), a vector search (VectorSearcher), a scan and
// update of embeddings for re-embedding (EmbeddingStore) and a scan of
// whole documents for an export (Scanner). Index.WriteBatch asks for one
// more: writes committed in one transaction with a checkpoint
// (BatchWriter). The backends of
// this module (Memory, recall/sqlite, recall/postgres) have every
// capability. Callers use Index.
//
// Every method of every capability is scoped to one tenant and never
// reads or writes another tenant's documents. Input is checked with
// CheckDocs, CheckTenant, CheckID and CheckFilter before anything is
// written, and refused with an error wrapping agentmem.ErrInvalid.
// Implementations are safe for concurrent use, and return copies:
// changing a document passed in or returned never changes what the
// backend holds. Every backend passes the conformance suite of package
// recalltest.
type Backend interface {
	// Upsert adds documents of one tenant, replacing those with the same
	// IDs, atomically: all or none.
	Upsert(ctx context.Context, docs ...Doc) error
	// Get returns the tenant's documents with the given IDs, in the order
	// asked; IDs that name no document are left out.
	Get(ctx context.Context, tenant string, ids ...string) ([]Doc, error)
	// Delete removes the tenant's documents with the given IDs and returns
	// how many there were.
	Delete(ctx context.Context, tenant string, ids ...string) (int, error)
	// Clear removes the tenant's documents that pass the filter (all of
	// them with the zero Filter) and returns how many there were.
	Clear(ctx context.Context, tenant string, f Filter) (int, error)
	// Around returns the documents of a group with from <= Seq <= to, in
	// Seq order (ties by ID).
	Around(ctx context.Context, tenant, group string, from, to int64) ([]Doc, error)
	// Tenants returns the tenants that have documents, sorted.
	Tenants(ctx context.Context) ([]string, error)
	// Close releases the backend's resources.
	Close() error
}

// LexicalSearcher is a backend's lexical index: BM25 candidates and the
// statistics of a TF-IDF search.
type LexicalSearcher interface {
	// Lexical returns the Limit documents that best match the analyzed
	// query terms by BM25 among those that pass the filter, best first,
	// ties by ID. Only documents holding at least one term are returned.
	Lexical(ctx context.Context, q LexicalQuery) ([]Match, error)
	// DocFreqs returns the tenant's document count and, of the given
	// analyzed terms, how many documents hold each: the statistics of a
	// TF-IDF search (Similarity TFIDF).
	DocFreqs(ctx context.Context, tenant string, terms []string) (DocStats, error)
}

// VectorSearcher is a backend's vector index.
type VectorSearcher interface {
	// Vector returns the Limit documents with an embedding of the query's
	// dimension closest to the query vector by cosine similarity, among
	// those that pass the filter, best first, ties by ID.
	Vector(ctx context.Context, q VectorQuery) ([]Match, error)
}

// EmbeddingStore lets Index.Reembed find and replace embeddings of
// another model without rewriting documents.
type EmbeddingStore interface {
	// Stale returns up to limit documents of the tenant, in ID order after
	// the ID after, whose EmbeddingModel is not model: what Index.Reembed
	// re-embeds. The documents' embeddings may be left out.
	Stale(ctx context.Context, tenant, model, after string, limit int) ([]Doc, error)
	// SetEmbeddings stores new embeddings, each only if its document still
	// has the text it was computed from (a document rewritten since keeps
	// its own), and never touches the lexical index. It returns how many
	// were stored.
	SetEmbeddings(ctx context.Context, tenant string, updates []EmbeddingUpdate) (int, error)
}

// Scanner reads a tenant's documents in ID order, whole: what an export
// of the index walks.
type Scanner interface {
	// Scan returns up to limit documents of the tenant that pass the
	// filter, with their embeddings, in ID order (bytewise) after the ID
	// after ("" for the first page).
	Scan(ctx context.Context, tenant string, f Filter, after string, limit int) ([]Doc, error)
}

// Capabilities are what a backend can do besides storing documents; a
// nil field is a capability it lacks. An Index refuses what needs a
// capability its backend lacks, with an error wrapping
// errors.ErrUnsupported. A TF-IDF search needs a LexicalSearcher, and so
// does a text search with nothing to embed it. A query vector needs a
// VectorSearcher, Reembed an EmbeddingStore, and Scan a Scanner.
type Capabilities struct {
	Lexical    LexicalSearcher
	Vector     VectorSearcher
	Embeddings EmbeddingStore
	Scan       Scanner
}

// CapabilitiesOf returns the capabilities of b: the interfaces its
// dynamic type implements. It is the one place they are discovered, so a
// wrapper of a backend has the capabilities it implements itself, not
// those of the backend it wraps.
func CapabilitiesOf(b Backend) Capabilities {
	var c Capabilities
	c.Lexical, _ = b.(LexicalSearcher)
	c.Vector, _ = b.(VectorSearcher)
	c.Embeddings, _ = b.(EmbeddingStore)
	c.Scan, _ = b.(Scanner)
	return c
}

// unsupported is the error of an Index asked for what needs a capability
// its backend lacks.
func unsupported(what, capability string) error {
	return fmt.Errorf("recall: %s needs %s, which the backend lacks: %w", what, capability, errors.ErrUnsupported)
}

// Candidate gating bounds the cost of a lexical search in a large
// tenant by the posting lists of its rarer terms, in the manner of
// Lucene's cutoff frequency. In a tenant of at least GateMinDocs
// documents, only documents holding one of the gate terms (see GateTerms)
// are candidates. The commoner query terms add to their scores without
// making candidates of their own. When no document that holds a
// gate term passes the search's filter (a session's scope may hold none
// of the tenant's rarer terms), every term makes candidates. A document
// holding only common query terms rarely belongs in the top results;
// below GateMinDocs, scoring is exhaustive. Every backend gates alike
// (the conformance suite's Ranking/Gating).
const (
	GateMinDocs = 10_000
	// GateBudget is the number of postings the gate terms may hold
	// together.
	GateBudget = 1_000
)

// GateTerms returns the gate terms of a query in a tenant of n documents,
// df giving the terms' document frequencies. Below GateMinDocs documents
// every term is a gate term. Otherwise they are the rarest terms, as many
// as fit together in GateBudget postings, and at least the rarest. Terms
// no document holds are left out.
func GateTerms(terms []string, df func(term string) float64, n float64) []string {
	var held []string
	for _, t := range terms {
		if df(t) > 0 {
			held = append(held, t)
		}
	}
	if n < GateMinDocs {
		return held
	}
	slices.SortStableFunc(held, func(a, b string) int { return cmp.Compare(df(a), df(b)) })
	var sum float64
	for i, t := range held {
		if sum += df(t); sum > GateBudget && i > 0 {
			return held[:i]
		}
	}
	return held
}

// Match is a candidate of a Lexical or Vector search: a document's ID,
// its place in its group, and its score (higher is better).
type Match struct {
	ID    string
	Group string
	Seq   int64
	Score float64
}

// LexicalQuery is a LexicalSearcher.Lexical search.
type LexicalQuery struct {
	Tenant string
	// Terms are analyzed query terms (see Tokenize), each once.
	Terms  []string
	Filter Filter
	// Limit is the number of candidates wanted; at least 1.
	Limit int
}

// VectorQuery is a VectorSearcher.Vector search.
type VectorQuery struct {
	Tenant string
	Vector []float32
	Filter Filter
	// Limit is the number of candidates wanted; at least 1.
	Limit int
}

// EmbeddingUpdate is a new embedding for a document
// (EmbeddingStore.SetEmbeddings).
type EmbeddingUpdate struct {
	ID string
	// Text is the text the vector was computed from: the update applies
	// only while the document still has it.
	Text   string
	Vector []float32
	Model  string
}

// Opener opens a backend from a URL whose scheme it was registered for.
type Opener func(ctx context.Context, u *url.URL) (Backend, error)

// backends holds the registered openers; "mem" is always there.
var backends = registry.New[Backend]("recall")

func init() {
	Register("mem", func(context.Context, *url.URL) (Backend, error) { return NewMemory(MemoryOptions{}), nil })
}

// Register makes a backend available to Open under a URL scheme, in the
// style of database/sql drivers: a backend package registers itself in
// its init function and a program imports it for that side effect:
//
//	import _ "github.com/agentmem/agentmem/recall/sqlite"
//
// Schemes are case-insensitive. Register panics if the opener is nil or
// the scheme is empty or already registered. "mem" is always registered.
func Register(scheme string, opener Opener) { backends.Register(scheme, opener) }

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string { return backends.Schemes() }

// OpenBackend opens the backend a URL names: "mem://" (in memory, always
// available), "sqlite:///path/to/file.db" (package recall/sqlite),
// "postgres://user@host/db" (package recall/postgres). The backend's
// package must be imported for its scheme to be known.
func OpenBackend(ctx context.Context, rawURL string) (Backend, error) {
	return backends.Open(ctx, rawURL)
}

// Open opens an Index over the backend a URL names (see OpenBackend),
// configured by opts. Closing the Index closes the backend.
func Open(ctx context.Context, rawURL string, opts Options) (*Index, error) {
	b, err := OpenBackend(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return New(b, opts), nil
}
