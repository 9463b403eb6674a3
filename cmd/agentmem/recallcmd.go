package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newRecallCmd) }

// recallFlags are the flags of agentmem recall and its subcommands.
type recallFlags struct {
	store, tenant, scope string
	k, before, after     int
	embed                embedFlags
}

func newRecallCmd(a *cli.App) *cobra.Command {
	var f recallFlags
	cmd := &cobra.Command{
		Use:   "recall",
		Short: "Search the recall index and rebuild it from the sessions",
		Long: `Recall works on the recall index that serve and mcp keep beside the
sessions, in the same database (give the same --store, or AGENTMEM_STORE):
every step appended through them is indexed as it is stored.

backfill indexes every session's log again: after an upgrade from a version
that did not index, after indexing failures the server logged, or after
restoring sessions with import. It is idempotent, so it can be run at any
time, while servers run.

search prints the best hits for a query, one JSON object per line.`,
		Example: `  agentmem recall backfill
  agentmem recall search "which database does staging use" --k 5 --scope user:alice
  agentmem recall search "deploy failed" --tenant acme --before 1 --after 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.store, "store", "", storeFlagUsage)
	addEmbedFlags(pf, &f.embed)

	backfill := &cobra.Command{
		Use:   "backfill [--tenant TENANT]",
		Short: "Index every session's log again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withMemories(cmd.Context(), a, f, false, func(ctx context.Context, st *store.Store, m *memories) error {
				ctx = agentmem.WithDamageReporter(ctx, func(d *agentmem.DamagedError) {
					a.Log.Error("damaged record left out", "kind", d.Kind, "tenant", d.Tenant, "id", d.ID, "err", d.Err)
				})
				n, err := m.indexer.Backfill(ctx, store.ListRequest{Tenant: f.tenant, PageSize: store.MaxPageSize})
				if err != nil {
					return cli.Failure(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "{\"documents\":%d}\n", n)
				return nil
			})
		},
	}
	backfill.Flags().StringVar(&f.tenant, "tenant", "", "only this `TENANT`'s sessions (default: every tenant)")

	search := &cobra.Command{
		Use:   "search QUERY [--k N] [--scope session:ID|user:ID|agent:ID]",
		Short: "Print the best hits for a query",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := recall.Query{Tenant: f.tenant, Text: args[0], K: f.k, Before: f.before, After: f.after}
			if f.scope != "" {
				filter, err := recall.ParseScope(f.scope)
				if err != nil {
					return cli.Usagef("--scope: %v", err)
				}
				q.Filter = filter
			}
			return withMemories(cmd.Context(), a, f, true, func(ctx context.Context, _ *store.Store, m *memories) error {
				hits, err := m.recall.Search(ctx, q)
				if err != nil {
					return cli.Failure(err)
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				for _, h := range hits {
					if err := enc.Encode(hitJSON(h)); err != nil {
						return cli.Failure(err)
					}
				}
				return nil
			})
		},
	}
	sf := search.Flags()
	sf.StringVar(&f.tenant, "tenant", "", "search this `TENANT`'s index (default: the default tenant)")
	sf.StringVar(&f.scope, "scope", "", "limit to one session, user or agent: session:ID, user:ID or agent:ID")
	sf.IntVar(&f.k, "k", 10, "the number of hits")
	sf.IntVar(&f.before, "before", 0, "also print up to `N` turns before each hit")
	sf.IntVar(&f.after, "after", 0, "also print up to `N` turns after each hit")
	cmd.AddCommand(backfill, search)
	return cmd
}

// hitJSON is a hit as search prints it.
func hitJSON(h recall.Hit) map[string]any {
	out := map[string]any{"id": h.Doc.ID, "score": h.Score, "text": h.Doc.Text}
	if sid := h.Doc.Metadata[recall.MetaSession]; sid != "" {
		out["session_id"] = sid
		if step, err := strconv.ParseInt(h.Doc.Metadata[recall.MetaStep], 10, 64); err == nil {
			out["step"] = step
		}
	}
	if !h.Doc.Time.IsZero() {
		out["time"] = h.Doc.Time
	}
	if len(h.Window) > 0 {
		var w []map[string]any
		for _, d := range h.Window {
			w = append(w, map[string]any{"id": d.ID, "seq": d.Seq, "text": d.Text})
		}
		out["window"] = w
	}
	return out
}

// withMemories opens the store and the long-term memories at --store and
// runs fn. With readOnly, a missing SQLite file is an error rather than a
// new store.
func withMemories(ctx context.Context, a *cli.App, f recallFlags, readOnly bool, fn func(context.Context, *store.Store, *memories) error) error {
	resolve := resolveStoreURL
	if readOnly {
		resolve = resolveExistingStoreURL
	}
	storeURL, err := resolve(a, f.store)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, storeURL)
	if err != nil {
		return cli.Failure(err)
	}
	defer st.Close()
	m, err := openMemories(ctx, storeURL, st, f.embed, a.Log)
	if err != nil {
		return err
	}
	defer m.Close()
	return fn(ctx, st, m)
}
