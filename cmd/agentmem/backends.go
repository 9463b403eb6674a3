package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/summarize"
	"github.com/agentmem/agentmem/views/recallview"
	"github.com/spf13/pflag"

	// The blocks, facts and recall backends, registered with blocks.Open,
	// facts.Open and recall.Open by URL scheme: they live in the same
	// database as the sessions.
	_ "github.com/agentmem/agentmem/blocks/postgres"
	_ "github.com/agentmem/agentmem/blocks/sqlite"
	_ "github.com/agentmem/agentmem/facts/postgres"
	_ "github.com/agentmem/agentmem/facts/sqlite"
	"github.com/agentmem/agentmem/internal/cli"
	_ "github.com/agentmem/agentmem/recall/postgres"
	_ "github.com/agentmem/agentmem/recall/sqlite"
)

// embedFlags configure the optional embedder of recall and facts.
type embedFlags struct {
	baseURL, key, model string
}

// addEmbedFlags adds the embedder's flags to fl.
func addEmbedFlags(fl *pflag.FlagSet, f *embedFlags) {
	fl.StringVar(&f.baseURL, "embed-base-url", "", "an OpenAI-compatible API `URL` whose /embeddings endpoint makes recall and facts search hybrid (lexical + vectors); without it they are lexical")
	fl.StringVar(&f.key, "embed-api-key", "", "the API key of --embed-base-url (prefer AGENTMEM_EMBED_API_KEY: flags show in ps)")
	fl.StringVar(&f.model, "embed-model", "", "the embedding `MODEL` of --embed-base-url; changing it re-embeds in the background")
}

// modelFlags configure the language model that writes summaries and
// learns facts from turns.
type modelFlags struct {
	baseURL, key, model string
	extractFacts        bool
}

// addModelFlags adds the model's flags to fl.
func addModelFlags(fl *pflag.FlagSet, f *modelFlags) {
	fl.StringVar(&f.baseURL, "llm-base-url", "", "an OpenAI-compatible API `URL` for LLM summaries and fact extraction (e.g. http://localhost:11434/v1)")
	fl.StringVar(&f.key, "llm-api-key", "", "the API key of --llm-base-url (prefer AGENTMEM_LLM_API_KEY: flags show in ps)")
	fl.StringVar(&f.model, "llm-model", "", "the chat model of --llm-base-url")
	fl.BoolVar(&f.extractFacts, "extract-facts", false, "learn facts about users from every turn of every session with a user_id that does not opt out, in the background (the model of --llm-base-url; docs/operations.md)")
}

// open returns the model's summarizer and fact extractor, both nil
// without --llm-base-url.
func (f modelFlags) open() (agentmem.Summarizer, facts.Extractor, error) {
	if f.extractFacts && f.baseURL == "" {
		return nil, nil, cli.Usagef("--extract-facts needs a model: give --llm-base-url (or AGENTMEM_LLM_BASE_URL)")
	}
	if f.baseURL == "" {
		return nil, nil, nil
	}
	client, err := llm.New(llm.Config{BaseURL: f.baseURL, APIKey: f.key, Model: f.model})
	if err != nil {
		return nil, nil, cli.Usagef("--llm-base-url: %v", err)
	}
	return summarize.NewLLM(client, summarize.LLMOptions{}), &facts.LLMExtractor{Client: client}, nil
}

// memories are the long-term memories a serving command opens beside the
// session store, in the same database: the recall index (with the indexer
// that keeps conversation recall in step with the store), user facts and
// memory blocks.
type memories struct {
	recall  *recall.Index
	indexer *recallview.Indexer
	facts   *facts.Memory
	blocks  *blocks.Memory
	// stopEmbed stops the background embedding; nil without an embedder.
	stopEmbed func()
}

// follow starts the view that indexes st's log for recall in the
// background (recallview.Start), as serve, mcp and import need; the
// caller stops it with the returned function before closing the index
// and the store. Writes never wait on the index; a failure to index is
// logged and retried from the follower's durable cursor.
func (m *memories) follow(st *store.Store, log *slog.Logger) (*recallview.Follower, func(), error) {
	feed, ok := st.Feed()
	if !ok {
		return nil, nil, fmt.Errorf("recall: the store %T has no change feed to index", st)
	}
	f, stop := recallview.Start(feed, st, m.indexer, recallview.FollowerOptions{
		OnError: func(err error) {
			log.Warn("recall indexing failed; the write is stored, and indexing is retried from the index's cursor in the log", "err", err)
		},
		OnDamaged: func(d *agentmem.DamagedError) {
			log.Error("damaged record left out by recall indexing", "kind", d.Kind, "tenant", d.Tenant, "id", d.ID, "err", d.Err)
		},
	})
	return f, stop, nil
}

// embedEvery is how often the background embedding looks for documents
// written since its last pass (a variable for tests).
var embedEvery = 10 * time.Second

// openMemories opens recall, facts and memory blocks at storeURL, next to
// st.
func openMemories(ctx context.Context, storeURL string, st *store.Store, ef embedFlags, log *slog.Logger) (*memories, error) {
	var (
		rOpts recall.Options
		fOpts facts.Options
	)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if ef.baseURL != "" {
		if ef.model == "" {
			return nil, cli.Usagef("--embed-base-url needs --embed-model")
		}
		emb, err := llm.New(llm.Config{BaseURL: ef.baseURL, APIKey: ef.key, EmbeddingModel: ef.model})
		if err != nil {
			return nil, cli.Usagef("--embed-base-url: %v", err)
		}
		// Writes never wait on the embedding service: documents are
		// indexed lexically at once and embedded in the background.
		rOpts = recall.Options{Embedder: emb, DeferEmbedding: true, OnEmbedError: func(ctx context.Context, err error) {
			log.WarnContext(ctx, "embedding a recall query failed; ranking lexically", "err", err)
		}}
		fOpts.Embedder = emb
	}
	// A branch's inherited turns are indexed once, under the session
	// that logged them; a search scoped to the branch follows its lineage.
	rOpts.Lineage = recallview.StoreLineage(st)
	ix, err := recall.Open(ctx, storeURL, rOpts)
	if err != nil {
		return nil, cli.Failure(fmt.Errorf("opening the recall index: %w", err))
	}
	fst, err := facts.Open(ctx, storeURL)
	if err != nil {
		ix.Close()
		return nil, cli.Failure(fmt.Errorf("opening the facts: %w", err))
	}
	bst, err := blocks.Open(ctx, storeURL)
	if err != nil {
		ix.Close()
		fst.Close()
		return nil, cli.Failure(fmt.Errorf("opening the memory blocks: %w", err))
	}
	m := &memories{
		recall:  ix,
		indexer: &recallview.Indexer{Index: ix, Store: st},
		facts:   facts.New(fst, fOpts),
		blocks:  blocks.New(bst, blocks.Options{}),
	}
	if rOpts.Embedder != nil {
		ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			embedLoop(ectx, ix, embedEvery, log)
		}()
		m.stopEmbed = func() { cancel(); <-done }
	}
	return m, nil
}

// embedLoop embeds, until ctx is done, the documents written without a
// vector (Upsert defers embedding so writes never wait on the embedding
// service) and those of another model (after --embed-model changed): a
// pass at once, then one every interval. A failed pass (the service is
// down) is logged and retried at the next; the lexical index serves
// searches throughout.
func embedLoop(ctx context.Context, ix *recall.Index, interval time.Duration, log *slog.Logger) {
	for {
		n, err := ix.Reembed(ctx, recall.ReembedOptions{})
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Warn("embedding recall documents failed; retrying later (lexical search is unaffected)", "err", err, "embedded", n)
		case n > 0:
			log.Debug("embedded recall documents", "documents", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// openIndexed opens the recall index and the facts beside st
// (openMemories) and starts indexing st's log for recall, in the
// background, as serve indexes it. done stops the indexing and closes the
// memories, in that order; st stays open.
func openIndexed(ctx context.Context, a *cli.App, storeURL string, st *store.Store, ef embedFlags) (follower *recallview.Follower, mems *memories, done func(), err error) {
	if mems, err = openMemories(ctx, storeURL, st, ef, a.Log); err != nil {
		return nil, nil, nil, err
	}
	follower, stop, err := mems.follow(st, a.Log)
	if err != nil {
		mems.Close()
		return nil, nil, nil, err
	}
	return follower, mems, func() {
		stop()
		mems.Close()
	}, nil
}

// Close stops the background embedding and closes recall, facts and the
// memory blocks.
func (m *memories) Close() error {
	if m.stopEmbed != nil {
		m.stopEmbed()
	}
	return errors.Join(m.recall.Close(), m.facts.Store().Close(), m.blocks.Store().Close())
}
