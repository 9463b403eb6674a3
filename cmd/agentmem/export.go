package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/store"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newExportCmd) }

// exportProgressMin is the fewest sessions that get a progress bar
// without --progress.
const exportProgressMin = 100

// exportFlags are the flags of agentmem export.
type exportFlags struct {
	store, tenant, user, agent, out string
	all                             bool
	progress                        cli.Progress
}

func newExportCmd(a *cli.App) *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export [SESSION...] [--all] [--user USER] [--agent AGENT] [-o FILE]",
		Short: "Write sessions to a JSONL file",
		Long: `Export writes sessions of the store as JSONL, in the format of the store's
Export: for each session a header line {"agentmem_export":1,"session":{...}}
and then one line per entry of its log (steps and compactions), in order,
with their sequence numbers, times and exact step JSON. Several sessions
are written one after another, each with its own header; 'agentmem import'
reads such a file back. A branch is written with the history it inherited,
so every session in the file stands alone.

Name the sessions, or select them: --all exports every session, --user and
--agent every session of that user or agent (expired sessions are left
out); --tenant confines either way to one tenant (default: every tenant).
Session IDs are per tenant: a named session is looked up in --tenant (the
default tenant "" when it is not given); one that does not exist there is
an error and nothing is written. A selected session whose stored record
does not decode (damaged) is left out: every other session is written,
the damaged ones are named on standard error, and the exit code is 1.

The output goes to standard output, or to -o FILE, which is written
completely or not at all (a temporary file renamed into place, mode 0600:
sessions hold what users told the agent). A progress bar counts the
sessions on standard error when it is a terminal, the export is not
written to that terminal, and there are at least 100 sessions (--progress
shows it always, --no-progress never).`,
		Example: `  agentmem export 0192f0c1-7d3e-7c4a-9a51-3b0e8f2d6a10 > session.jsonl
  agentmem export --all -o backup.jsonl
  agentmem export --user alice --tenant acme -o alice.jsonl
  agentmem export --all --store sqlite:///old.db | agentmem import --store postgres://db/agentmem`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd.Context(), a, f, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.store, "store", "", storeFlagUsage)
	fl.BoolVar(&f.all, "all", false, "export every session (of --tenant, if given)")
	fl.StringVar(&f.user, "user", "", "export every session of this `USER`")
	fl.StringVar(&f.agent, "agent", "", "export every session of this `AGENT`")
	fl.StringVar(&f.tenant, "tenant", "", "only this `TENANT`'s sessions (default: every tenant)")
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
	toFile := f.out != "" && f.out != "-"
	ids = dedupe(ids)
	for _, id := range ids {
		if err := store.ValidateID(id); err != nil {
			return cli.Usagef("SESSION %q: %v", id, err)
		}
	}
	list := store.ListRequest{Tenant: f.tenant, UserID: f.user, Agent: f.agent, PageSize: store.MaxPageSize}
	if _, _, err := store.ValidateList(list); err != nil {
		return cli.UsageError(err)
	}
	st, err := openSessionStore(ctx, a, f.store, true)
	if err != nil {
		return err
	}
	defer st.Close()

	// Find every session first, so that a missing one writes nothing.
	var (
		keys    []store.Key
		damaged []*agentmem.DamagedError
	)
	if selecting {
		keys, damaged, err = listSessions(ctx, st, list)
		if err != nil {
			return cli.Failure(err)
		}
	} else {
		for _, id := range ids {
			if _, err := st.Get(ctx, f.tenant, id); err != nil {
				return sessionErr(id, err)
			}
			keys = append(keys, store.Key{Tenant: f.tenant, ID: id})
		}
	}

	var bar *progressbar.ProgressBar
	if f.progress.Show(cli.IsTerminal(stderr) && len(keys) >= exportProgressMin && (toFile || !cli.IsTerminal(stdout))) {
		bar = cli.NewBar(stderr, int64(len(keys)), "exporting", "sessions")
	}
	n, size, skipped, err := writeExport(ctx, st, keys, selecting, f.out, stdout, bar)
	if bar != nil {
		_ = bar.Finish() // clears it
	}
	if err != nil {
		return cli.Failure(err)
	}
	damaged = append(damaged, skipped...)
	dest := f.out
	if dest == "" || dest == "-" {
		dest = "stdout"
	}
	if n == 0 && len(damaged) == 0 {
		a.Log.Warn("no sessions matched: nothing exported", "tenant", f.tenant, "user", f.user, "agent", f.agent)
	}
	a.Log.Info("exported", "sessions", n, "bytes", size, "to", dest)
	if len(damaged) > 0 {
		// Every healthy session is written; the damaged ones are named,
		// and the exit status says that the export is not whole.
		names := make([]string, len(damaged))
		for i, d := range damaged {
			a.Log.Error("damaged session not exported", "tenant", d.Tenant, "id", d.ID, "err", d.Err)
			names[i] = strconv.Quote(d.ID)
			if d.Tenant != "" {
				names[i] += " (tenant " + strconv.Quote(d.Tenant) + ")"
			}
		}
		return cli.Failure(fmt.Errorf("%d damaged sessions were not exported (their stored records do not decode): %s", len(damaged), strings.Join(names, ", ")))
	}
	return nil
}

// writeExport exports the sessions to the file path, written completely
// or not at all, or to stdout when path is "" or "-". It returns how many
// sessions and bytes it wrote, and the selected sessions it left out as
// damaged (see exportSessions).
func writeExport(ctx context.Context, st store.Store, keys []store.Key, selected bool, path string, stdout io.Writer, bar *progressbar.ProgressBar) (int, int64, []*agentmem.DamagedError, error) {
	var (
		w      = stdout
		commit = func() error { return nil }
		abort  = func() {}
	)
	if path != "" && path != "-" {
		file, err := cli.CreateAtomic(path)
		if err != nil {
			return 0, 0, nil, err
		}
		w, commit, abort = file, file.Commit, file.Abort
	}
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 256<<10)
	n, damaged, err := exportSessions(ctx, st, keys, selected, bw, bar)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = commit()
	}
	if err != nil {
		abort()
		return 0, 0, nil, err
	}
	return n, cw.n, damaged, nil
}

// exportSessions writes the sessions one after the other and returns how
// many it wrote, advancing bar (if not nil) by one for each. A selected
// session deleted since it was listed is skipped, and so is one that is
// damaged (its stored record does not decode) before anything of it was
// written, which it returns; a named one is an error either way.
func exportSessions(ctx context.Context, st store.Store, keys []store.Key, selected bool, w io.Writer, bar *progressbar.ProgressBar) (int, []*agentmem.DamagedError, error) {
	n := 0
	var damaged []*agentmem.DamagedError
	cw := &countingWriter{w: w}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return n, damaged, err
		}
		id := k.ID
		before := cw.n
		err := store.Export(ctx, st, k.Tenant, k.ID, cw)
		if bar != nil {
			_ = bar.Add(1)
		}
		if selected && errors.Is(err, agentmem.ErrNotFound) {
			continue
		}
		var d *agentmem.DamagedError
		if selected && errors.As(err, &d) && cw.n == before {
			damaged = append(damaged, d)
			continue
		}
		if err != nil {
			return n, damaged, fmt.Errorf("session %q: %w", id, err)
		}
		n++
	}
	return n, damaged, nil
}

// listSessions returns the keys of every session req selects, newest
// first, and the damaged sessions the lists left out.
func listSessions(ctx context.Context, st store.Store, req store.ListRequest) ([]store.Key, []*agentmem.DamagedError, error) {
	var (
		keys    []store.Key
		damaged []*agentmem.DamagedError
	)
	for {
		page, err := st.List(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		for _, s := range page.Sessions {
			keys = append(keys, s.Key())
		}
		damaged = append(damaged, page.Damaged...)
		if page.NextPageToken == "" {
			return keys, damaged, nil
		}
		req.PageToken = page.NextPageToken
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

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
