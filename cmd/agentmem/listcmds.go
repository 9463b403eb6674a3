package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/store"
	"github.com/spf13/cobra"
)

func init() {
	cli.Register(newSessionsCmd)
	cli.Register(newFactsCmd)
}

// sessionsFlags are the flags of agentmem sessions list.
type sessionsFlags struct {
	store, tenant, user, agent string
	limit                      int
	json                       bool
}

func newSessionsCmd(a *cli.App) *cobra.Command {
	var f sessionsFlags
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the sessions of the store",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	list := &cobra.Command{
		Use:   "list [--tenant T] [--user U] [--agent A] [--limit N] [--json]",
		Short: "List sessions, the most recently updated first",
		Long: `List prints the sessions of the store, the most recently updated first: one
line each with its ID, tenant, user, agent, last sequence number and
update time, or with --json one JSON object per line (the fields of GET
/v1/sessions/{id}). --tenant, --user and --agent filter; --limit stops
after that many (0: every session). Sessions whose stored record is
damaged are named on standard error, and the exit code is then 1.

It only reads: a store that does not exist is an error.`,
		Example: `  agentmem sessions list
  agentmem sessions list --user alice --json | jq -r .id
  agentmem sessions list --tenant acme --limit 10 --store postgres://db/agentmem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSessionsList(cmd.Context(), a, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := list.Flags()
	fl.StringVar(&f.store, "store", "", storeFlagUsage)
	fl.StringVar(&f.tenant, "tenant", "", "only this `TENANT`'s sessions (default: every tenant)")
	fl.StringVar(&f.user, "user", "", "only this `USER`'s sessions")
	fl.StringVar(&f.agent, "agent", "", "only this `AGENT`'s sessions")
	fl.IntVar(&f.limit, "limit", 50, "list at most `N` sessions (0: all)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object per session")
	cmd.AddCommand(list)
	return cmd
}

func runSessionsList(ctx context.Context, a *cli.App, f sessionsFlags, out, stderr io.Writer) error {
	if f.limit < 0 {
		return cli.Usagef("--limit must not be negative")
	}
	req := store.ListRequest{Tenant: f.tenant, UserID: f.user, Agent: f.agent, PageSize: store.MaxPageSize}
	if _, _, err := store.ValidateList(req); err != nil {
		return cli.UsageError(err)
	}
	st, err := openSessionStore(ctx, a, f.store, true)
	if err != nil {
		return err
	}
	defer st.Close()
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if !f.json {
		fmt.Fprintln(tw, "ID\tTENANT\tUSER\tAGENT\tLAST SEQ\tUPDATED")
	}
	enc := json.NewEncoder(out)
	n, damaged := 0, 0
	for f.limit == 0 || n < f.limit {
		resp, err := st.List(ctx, req)
		if err != nil {
			return cli.Failure(err)
		}
		for _, d := range resp.Damaged {
			damaged++
			fmt.Fprintf(stderr, "agentmem sessions list: damaged record left out: tenant %q, session %q: %v\n", d.Tenant, d.ID, d.Err)
		}
		for _, s := range resp.Sessions {
			if f.limit > 0 && n == f.limit {
				break
			}
			n++
			if f.json {
				if err := enc.Encode(s); err != nil {
					return cli.Failure(err)
				}
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, orDash(s.Tenant), orDash(s.UserID), orDash(s.Agent), s.LastSeq, stamp(s.UpdatedAt))
		}
		if resp.NextPageToken == "" {
			break
		}
		req.PageToken = resp.NextPageToken
	}
	if err := tw.Flush(); err != nil {
		return cli.Failure(err)
	}
	if damaged > 0 {
		return cli.Failure(fmt.Errorf("%d damaged session records left out", damaged))
	}
	return nil
}

// factsFlags are the flags of agentmem facts.
type factsFlags struct {
	recall           recallFlags // --store, --tenant and the embedder
	superseded, json bool
	k                int
	minConfidence    float64
}

func newFactsCmd(a *cli.App) *cobra.Command {
	var f factsFlags
	cmd := &cobra.Command{
		Use:   "facts",
		Short: "List and search what is known about a user",
		Long: `Facts reads the user facts of the store: the statements agents remembered
about a user, with their confidence (which decays unless a fact is seen
again) and where they came from. Both subcommands only read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.recall.store, "store", "", storeFlagUsage)
	pf.StringVar(&f.recall.tenant, "tenant", "", "the `TENANT` of the user (default: the default tenant \"\")")
	pf.BoolVar(&f.json, "json", false, "print one JSON object per fact")
	addEmbedFlags(pf, &f.recall.embed)

	list := &cobra.Command{
		Use:   "list USER [--superseded] [--json]",
		Short: "List a user's facts, the most confident first",
		Example: `  agentmem facts list alice
  agentmem facts list alice --superseded --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemories(cmd.Context(), a, f.recall, true, func(ctx context.Context, _ *store.Store, m *memories) error {
				all, err := m.facts.List(ctx, f.recall.tenant, args[0], f.superseded)
				if err != nil {
					return cli.Classify(err)
				}
				hits := make([]facts.Hit, len(all))
				for i, ft := range all {
					hits[i] = facts.Hit{Fact: ft, Relevance: 1, Confidence: m.facts.Confidence(ft)}
					hits[i].Score = hits[i].Confidence
				}
				return writeFacts(cmd.OutOrStdout(), hits, f.json, false)
			})
		},
	}
	list.Flags().BoolVar(&f.superseded, "superseded", false, "also list facts a later one contradicted")

	search := &cobra.Command{
		Use:   "search USER QUERY [--k N] [--json]",
		Short: "Print a user's facts that best match a query",
		Example: `  agentmem facts search alice "which language should answers be in"
  agentmem facts search alice "editor" --k 3 --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.k < 1 {
				return cli.Usagef("--k must be at least 1")
			}
			return withMemories(cmd.Context(), a, f.recall, true, func(ctx context.Context, _ *store.Store, m *memories) error {
				hits, err := m.facts.Search(ctx, facts.SearchRequest{Tenant: f.recall.tenant, UserID: args[0], Query: args[1],
					K: f.k, MinConfidence: f.minConfidence, IncludeSuperseded: f.superseded})
				if err != nil {
					return cli.Classify(err)
				}
				return writeFacts(cmd.OutOrStdout(), hits, f.json, true)
			})
		},
	}
	sf := search.Flags()
	sf.IntVar(&f.k, "k", facts.DefaultK, "the most facts to print")
	sf.Float64Var(&f.minConfidence, "min-confidence", 0, "leave out facts whose confidence now is below this")
	sf.BoolVar(&f.superseded, "superseded", false, "also search facts a later one contradicted")
	cmd.AddCommand(list, search)
	return cmd
}

// writeFacts prints facts as a table (with the relevance column for a
// search) or as JSON lines of hits.
func writeFacts(out io.Writer, hits []facts.Hit, asJSON, relevance bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		for _, h := range hits {
			if err := enc.Encode(h); err != nil {
				return cli.Failure(err)
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	head := "ID\tCONFIDENCE\tSEEN\tTEXT"
	if relevance {
		head = "ID\tRELEVANCE\tCONFIDENCE\tSEEN\tTEXT"
	}
	fmt.Fprintln(tw, head)
	for _, h := range hits {
		text := h.Fact.Text
		if h.Fact.SupersededBy != "" {
			text += "  (superseded by " + h.Fact.SupersededBy + ")"
		}
		rel := ""
		if relevance {
			rel = fmt.Sprintf("%.2f\t", h.Relevance)
		}
		fmt.Fprintf(tw, "%s\t%s%.2f\t%dx\t%s\n", h.Fact.ID, rel, h.Confidence, h.Fact.Reinforcements+1, text)
	}
	if err := tw.Flush(); err != nil {
		return cli.Failure(err)
	}
	return nil
}
