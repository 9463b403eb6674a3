package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/bundle"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/store"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newExportCmd) }

// exportProgressMin is the fewest sessions (or users, or block owners)
// that get a progress bar without --progress.
const exportProgressMin = 100

// exportFlags are the flags of agentmem export.
type exportFlags struct {
	store, tenant, user, agent, out string
	all, exactTenant                bool
	progress                        cli.Progress
}

func newExportCmd(a *cli.App) *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export [SESSION...] [--all] [--user USER] [--agent AGENT] [-o FILE]",
		Short: "Write sessions, facts, memory blocks and recall documents to a bundle",
		Long: `Export writes a bundle: a JSONL file of sessions, with their logs and memory
blocks, and, with --all or --user, users' facts (with their histories and
audit logs), users' memory blocks (with their versions) and the documents
put into recall through the API, so that 'agentmem import' recreates them
exactly in another store. The format (version 2: a header line, a line
per record, an end line that counts them) is in docs/bundle.md. Recall
documents made from sessions are not written: importing the sessions
indexes them again.

Name the sessions, or select them: --all exports everything, --user every
session of that user with the user's facts, blocks and documents (those
whose metadata names the user), --agent every session of that agent
(expired sessions are left out); --tenant confines either way to one
tenant (default: every tenant). Named sessions and an agent's come with
their memory blocks alone. Session IDs are per tenant: a named session is
looked up in --tenant (the default tenant "" when it is not given); one
that does not exist there is an error and nothing is written. A selected
record whose stored form does not decode (damaged) is left out: every
other is written, the damaged ones are named on standard error, and the
exit code is 1.

The output goes to standard output, or to -o FILE, which is written
completely or not at all (a temporary file renamed into place, mode 0600:
a bundle holds what users told the agent). A progress bar counts the
sessions, users, block owners and documents on standard error when it is
a terminal, the export is not written to that terminal, and there are at
least 100 of them (--progress shows it always, --no-progress never).`,
		Example: `  agentmem export 0192f0c1-7d3e-7c4a-9a51-3b0e8f2d6a10 > session.jsonl
  agentmem export --all -o backup.jsonl
  agentmem export --user alice --tenant acme -o alice.jsonl
  agentmem export --all --tenant acme --store sqlite:///old.db | agentmem import --store postgres://db/agentmem`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.exactTenant = cmd.Flags().Changed("tenant")
			return runExport(cmd.Context(), a, f, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.store, "store", "", storeFlagUsage)
	fl.BoolVar(&f.all, "all", false, "export everything (of --tenant, if given): sessions, facts, memory blocks, recall documents")
	fl.StringVar(&f.user, "user", "", "export every session of this `USER`, with the user's facts, memory blocks and recall documents")
	fl.StringVar(&f.agent, "agent", "", "export every session of this `AGENT`")
	fl.StringVar(&f.tenant, "tenant", "", "only this `TENANT`'s records (default: every tenant)")
	fl.StringVarP(&f.out, "output", "o", "", "write to `FILE` instead of standard output (- for standard output)")
	f.progress.AddFlags(fl)
	return cmd
}

func runExport(ctx context.Context, a *cli.App, f exportFlags, ids []string, stdout, stderr io.Writer) error {
	selecting := f.all || f.user != "" || f.agent != ""
	switch {
	case len(ids) > 0 && selecting:
		return cli.Usagef("name sessions or select them with --all, --user or --agent, not both")
	case len(ids) == 0 && !selecting:
		return cli.Usagef("name the sessions to export, or give --all, --user or --agent")
	}
	if err := f.progress.Check(); err != nil {
		return err
	}
	for _, id := range ids {
		if err := store.ValidateID(id); err != nil {
			return cli.Usagef("SESSION %q: %v", id, err)
		}
	}
	ids = dedupe(ids)
	list := store.ListRequest{Tenant: f.tenant, UserID: f.user, Agent: f.agent, PageSize: store.MaxPageSize}
	if _, _, err := store.ValidateList(list); err != nil {
		return cli.UsageError(err)
	}
	storeURL, err := resolveExistingStoreURL(a, f.store)
	if err != nil {
		return err
	}
	st, err := openSessionStore(ctx, a, storeURL, true)
	if err != nil {
		return err
	}
	defer st.Close()
	mems, err := openMemories(ctx, storeURL, st, embedFlags{}, a.Log)
	if err != nil {
		return err
	}
	defer mems.Close()
	for _, id := range ids {
		if _, err := st.Get(ctx, f.tenant, id); err != nil {
			return sessionErr(id, err)
		}
	}

	var (
		w             = stdout
		commit, abort = func() error { return nil }, func() {}
		toFile        = f.out != "" && f.out != "-"
		dest          = "stdout"
	)
	bars := &partBars{stderr: stderr, show: func(total int) bool {
		return f.progress.Show(cli.IsTerminal(stderr) && (toFile || !cli.IsTerminal(stdout)) && (total < 0 || total >= exportProgressMin))
	}}
	sel := bundle.Selection{Sessions: ids, All: f.all, UserID: f.user, Agent: f.agent, Tenant: f.tenant, ExactTenant: f.exactTenant}
	from := bundle.Stores{Sessions: st, Facts: mems.facts.Store(), Blocks: mems.blocks.Store(), Recall: mems.recall}
	if toFile {
		// A failed export leaves no file behind, and an existing one as
		// it was.
		file, err := cli.CreateAtomic(f.out)
		if err != nil {
			return cli.Failure(err)
		}
		w, commit, abort, dest = file, file.Commit, file.Abort, f.out
	}
	sum, err := bundle.Export(ctx, from, sel, w, bundle.ExportOptions{Progress: bars.export})
	bars.finish()
	if err == nil {
		err = commit()
	}
	if err != nil {
		abort()
		return cli.Failure(err)
	}
	c := sum.Counts
	if c == (bundle.Counts{}) && len(sum.Damaged) == 0 {
		a.Log.Warn("nothing matched: nothing exported", "tenant", f.tenant, "user", f.user, "agent", f.agent)
	}
	a.Log.Info("exported", "sessions", c.Sessions, "users", c.Users, "blocks", c.Blocks, "documents", c.Documents, "bytes", sum.Bytes, "to", dest)
	if len(sum.Damaged) > 0 {
		// Every healthy record is written; the damaged ones are named,
		// and the exit status says that the export is not whole.
		names := make([]string, len(sum.Damaged))
		for i, d := range sum.Damaged {
			a.Log.Error("damaged record not exported", "kind", d.Kind, "tenant", d.Tenant, "id", d.ID, "err", d.Err)
			names[i] = d.Kind + " " + strconv.Quote(d.ID)
			if d.Tenant != "" {
				names[i] += " (tenant " + strconv.Quote(d.Tenant) + ")"
			}
		}
		what := fmt.Sprintf("%d damaged records were", len(names))
		if len(names) == 1 {
			what = "1 damaged record was"
		}
		return cli.Failure(fmt.Errorf("%s not exported (stored forms that do not decode): %s", what, strings.Join(names, ", ")))
	}
	return nil
}

// partBars shows a progress bar per part of an export, or per phase of
// an import, one after the other on stderr.
type partBars struct {
	stderr io.Writer
	// show says whether a part of total units (-1: unknown) gets a bar.
	show func(total int) bool
	part string
	bar  *progressbar.ProgressBar
}

// export is bundle.ExportOptions.Progress.
func (b *partBars) export(p bundle.ExportProgress) {
	if p.Part != b.part {
		b.finish()
		b.part = p.Part
		if p.Total != 0 && b.show(p.Total) {
			unit := map[string]string{bundle.KindSession: "sessions", bundle.KindFacts: "users' facts", bundle.KindBlock: "block owners", bundle.KindDocument: "documents"}[p.Part]
			b.bar = cli.NewBar(b.stderr, int64(p.Total), "exporting", unit)
		}
	}
	if b.bar != nil && p.Done > 0 {
		_ = b.bar.Set(p.Done)
	}
}

// finish clears the bar of the part that ended.
func (b *partBars) finish() {
	if b.bar != nil {
		_ = b.bar.Finish() // clears it
		b.bar = nil
	}
}

// dedupe drops repeated strings, keeping the first of each.
func dedupe(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
