package recall

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/agentmem/agentmem"
)

// embed calls e and checks that it returned one finite vector per text.
func embed(ctx context.Context, e agentmem.Embedder, texts []string) ([][]float32, error) {
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("recall: embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("recall: embed: %d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) == 0 {
			return nil, fmt.Errorf("recall: embed: vector %d is empty", i)
		}
		if err := checkVector("embedding", v); err != nil {
			return nil, fmt.Errorf("recall: embed: vector %d: %w", i, err)
		}
	}
	return vecs, nil
}

// DefaultReembedBatch is the batch size of a zero ReembedOptions.
const DefaultReembedBatch = 64

// ReembedOptions configure Reembed.
type ReembedOptions struct {
	// Tenants limits re-embedding to these tenants; nil means every
	// tenant (Backend.Tenants).
	Tenants []string
	// Batch is the number of documents embedded per call; 0 means
	// DefaultReembedBatch.
	Batch int
	// Progress, when set, is called after every batch with the number of
	// documents re-embedded so far.
	Progress func(done int)
}

// Reembed embeds, in batches, every document whose EmbeddingModel is not
// the Index's Embedder's: documents written with no vector, or by another
// model. It stores the vectors without touching the lexical index, which
// keeps serving searches throughout. A document rewritten while its batch was being embedded
// keeps its new version. It returns how many documents it re-embedded,
// and stops at the first error or when ctx is cancelled, keeping the
// batches already stored: running it again resumes.
func (ix *Index) Reembed(ctx context.Context, opts ReembedOptions) (int, error) {
	e := ix.opts.Embedder
	if e == nil {
		return 0, errors.New("recall: reembed: the index has no Embedder")
	}
	es := ix.caps.Embeddings
	if es == nil {
		return 0, unsupported("re-embedding", "an embedding store")
	}
	batch := opts.Batch
	if batch <= 0 {
		batch = DefaultReembedBatch
	}
	tenants := opts.Tenants
	if tenants == nil {
		var err error
		if tenants, err = ix.b.Tenants(ctx); err != nil {
			return 0, err
		}
	}
	done := 0
	for _, tenant := range tenants {
		after := ""
		for {
			if err := ctx.Err(); err != nil {
				return done, err
			}
			docs, err := es.Stale(ctx, tenant, e.EmbeddingModel(), after, batch)
			if err != nil {
				return done, err
			}
			if len(docs) == 0 {
				break
			}
			after = docs[len(docs)-1].ID
			texts := make([]string, len(docs))
			for i, d := range docs {
				texts[i] = d.Text
			}
			vecs, err := embed(ctx, e, texts)
			if err != nil {
				return done, err
			}
			ups := make([]EmbeddingUpdate, len(docs))
			for i, d := range docs {
				ups[i] = EmbeddingUpdate{ID: d.ID, Text: d.Text, Vector: vecs[i], Model: e.EmbeddingModel()}
			}
			n, err := es.SetEmbeddings(ctx, tenant, ups)
			if err != nil {
				return done, err
			}
			done += n
			if opts.Progress != nil {
				opts.Progress(done)
			}
		}
	}
	return done, nil
}

// Reembedding is a Reembed running in the background (StartReembed).
type Reembedding struct {
	cancel context.CancelFunc
	done   chan struct{}
	n      atomic.Int64
	mu     sync.Mutex
	err    error
}

// StartReembed runs Reembed in a goroutine and returns at once; the
// index keeps serving, lexical search unchanged, vector search improving
// as batches land. Stop or cancelling ctx stops it.
func (ix *Index) StartReembed(ctx context.Context, opts ReembedOptions) *Reembedding {
	ctx, cancel := context.WithCancel(ctx)
	r := &Reembedding{cancel: cancel, done: make(chan struct{})}
	progress := opts.Progress
	opts.Progress = func(done int) {
		r.n.Store(int64(done))
		if progress != nil {
			progress(done)
		}
	}
	go func() {
		defer close(r.done)
		defer cancel()
		n, err := ix.Reembed(ctx, opts)
		r.n.Store(int64(n))
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
	}()
	return r
}

// Done is closed when the re-embedding has finished or stopped.
func (r *Reembedding) Done() <-chan struct{} { return r.done }

// Reembedded returns how many documents have been re-embedded so far.
func (r *Reembedding) Reembedded() int { return int(r.n.Load()) }

// Stop cancels the re-embedding and waits for it to stop.
func (r *Reembedding) Stop() {
	r.cancel()
	<-r.done
}

// Wait waits for the re-embedding to end and returns the number of
// documents re-embedded and the error that stopped it, if any
// (context.Canceled after Stop).
func (r *Reembedding) Wait() (int, error) {
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.n.Load()), r.err
}
