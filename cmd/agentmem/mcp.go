package main

import (
	"context"
	"errors"
	"io"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/internal/cli"
	agentmcp "github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/agentmem/agentmem/views"
	"github.com/agentmem/agentmem/views/autocompact"
	"github.com/agentmem/agentmem/views/factextract"
	"github.com/agentmem/agentmem/views/sessionblocks"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newMCPCmd) }

// mcpFlags are the flags of agentmem mcp.
type mcpFlags struct {
	store, tenant, tokenizer string
	embed                    embedFlags
	model                    modelFlags
}

func newMCPCmd(a *cli.App) *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the MCP tools over stdio, for desktop assistants and IDEs",
		Long: `mcp runs agentmem's Model Context Protocol server over stdio: an MCP
client (a desktop assistant, an IDE) starts it as a subprocess and talks
JSON-RPC on its stdin and stdout. Diagnostics go to stderr only.

The tools:
  create_session, list_sessions   start and find sessions
  append, pop                     add chat messages (tool calls with their results),
                                  take the newest off
  get_context                     a session's messages fitted to a token budget,
                                  in the openai, anthropic or observation format
  remember, recall_facts, forget  long-term facts about users, whose confidence
                                  decays unless they are seen again
  search_memory                   search the turns of past sessions, by session,
                                  user or agent, with the turns around each match
  memory_list, memory_append,     the memory blocks every context shows, which
  memory_replace, memory_rethink  the agent edits
  extract_facts                   learn a user's facts from a turn, with the
                                  model of --llm-base-url

It opens the same store as serve (--store, or AGENTMEM_STORE, or the
default SQLite file in the user's data directory), with the recall index
and the facts in the same database, so an assistant and the HTTP API see
the same sessions, facts and recall. Every turn appended is indexed for
search_memory at once; --embed-base-url adds vector search. A model
(--llm-base-url) writes the summaries of automatic compaction and learns
facts from turns, as serve's does. Every tool acts for --tenant. The HTTP server offers the same tools at /mcp (streamable
HTTP).

See docs/mcp.md for client configuration.`,
		Example: `  agentmem mcp
  agentmem mcp --store sqlite:///var/lib/agentmem/agentmem.db --tenant acme
  {"mcpServers": {"agentmem": {"command": "agentmem", "args": ["mcp"]}}}   # a client's configuration`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCP(cmd.Context(), a, f, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.store, "store", "", storeFlagUsage)
	fl.StringVar(&f.tenant, "tenant", "", "act for `TENANT` (default: the default tenant, as serve without API keys)")
	fl.StringVar(&f.tokenizer, "tokenizer", tokenizer.O200kBase, "get_context's default token counter: o200k_base, cl100k_base or heuristic")
	addEmbedFlags(fl, &f.embed)
	addModelFlags(fl, &f.model)
	return cmd
}

func runMCP(ctx context.Context, a *cli.App, f mcpFlags, stdin io.Reader, stdout io.Writer) error {
	counter, err := tokenizer.Get(f.tokenizer)
	if err != nil {
		return cli.Usagef("--tokenizer %q: %v", f.tokenizer, err)
	}
	summarizer, extractor, err := f.model.open()
	if err != nil {
		return err
	}
	storeURL, err := resolveStoreURL(a, f.store)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, storeURL)
	if err != nil {
		return cli.Failure(err)
	}
	defer st.Close()
	// Every step written to the store is indexed for recall, in the
	// background, from the store's log.
	follower, mems, done, err := openIndexed(ctx, a, storeURL, st, f.embed)
	if err != nil {
		return err
	}
	defer done()
	svc, err := sessions.New(sessions.Config{Store: st, Counter: counter, Logger: a.Log, Summarizer: summarizer, Facts: mems.facts, Recall: mems.recall, Blocks: mems.blocks,
		Extraction: extractor != nil && mems.facts != nil, ExtractByDefault: f.model.extractFacts && mems.facts != nil})
	if err != nil {
		return cli.UsageError(err)
	}
	defer svc.DropCache()
	defer svc.NotifyWrites(follower.Notify)()
	_, stopViews, err := startViews(a, svc, st, mems.facts, extractor)
	if err != nil {
		return cli.UsageError(err)
	}
	defer stopViews()
	srv, err := agentmcp.New(agentmcp.Config{
		Store: st, Facts: mems.facts, Extractor: extractor, Recall: mems.recall, RecallFollower: follower, Blocks: mems.blocks,
		Tenant: f.tenant, Counter: counter, Logger: a.Log, Version: buildVersion(), Sessions: svc,
	})
	if err != nil {
		return cli.UsageError(err)
	}
	a.Log.Info("agentmem mcp serving on stdio", "store", redactURL(storeURL), "tenant", f.tenant)
	t := &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := srv.Run(ctx, t); err != nil && !errors.Is(err, io.EOF) {
		return cli.Failure(err)
	}
	a.Log.Info("mcp client disconnected")
	return nil
}

// startViews runs the views of the store's log that a serving command
// keeps besides recall, each from its cursor in the log. They are the
// automatic compaction (autocompact) and the deletion of deleted
// sessions' memory blocks (sessionblocks). When the service extracts
// facts (a model and the facts memory), they include fact extraction
// (factextract), whose follower it returns. Of the servers sharing the
// store, the one holding its lease extracts. The returned function stops them. A store without a feed runs
// none.
func startViews(a *cli.App, svc *sessions.Service, st *store.Store, mem *facts.Memory, ex facts.Extractor) (*views.Follower, func(), error) {
	feed, ok := st.Feed()
	if !ok {
		return nil, func() {}, nil
	}
	warn := func(msg string) views.Options {
		return views.Options{OnError: func(err error) { a.Log.Warn(msg, "err", err) }}
	}
	_, stopCompact := autocompact.Start(svc, feed, warn("automatic compaction failed; the session is stored as it was, and the compaction is retried from its cursor in the log"))
	_, stopBlocks := sessionblocks.Start(svc, feed, warn("deleting a deleted session's memory blocks failed; retried from the cursor in the log"))
	stop := func() { stopCompact(); stopBlocks() }
	if !svc.Features().Extraction {
		return nil, stop, nil
	}
	opts := warn("fact extraction failed: the turn is retried from the cursor in the log, unless the error says it was skipped")
	opts.OnLease = func(l views.LeaseStatus) {
		a.Log.Info("fact extraction lease (held: this server extracts)", "held", l.Held, "holder", l.Holder)
	}
	l, stopExtract, err := factextract.Start(svc, feed, factextract.Config{Facts: mem, Extractor: ex, Select: svc.Extracts, Follow: opts})
	if err != nil {
		stop()
		return nil, nil, err
	}
	return l.Follower, func() { stopExtract(); stopCompact(); stopBlocks() }, nil
}

// nopWriteCloser is a Writer whose Close does nothing: stdout stays open.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
