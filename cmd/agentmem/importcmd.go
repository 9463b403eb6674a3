package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/bundle"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newImportCmd) }

// importFlags are the flags of agentmem import.
type importFlags struct {
	store, onConflict  string
	tenant             string
	newIDs, allowShort bool
	progress           cli.Progress
	json               bool
	maxLineBytes       int
}

// importResult is what became of one record of the input.
type importResult = bundle.Result

// Import statuses, one per record of the input.
const (
	importImported = bundle.Imported
	importFailed   = bundle.Failed
	importSkipped  = bundle.Skipped
)

// progressMinBytes is the smallest input that gets a progress bar
// without --progress.
const progressMinBytes = 1 << 20

func newImportCmd(a *cli.App) *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import [FILE|-]",
		Short: "Read a bundle (sessions, facts, memory blocks, recall documents)",
		Long: `Import reads a bundle written by 'agentmem export' from FILE, or from
standard input when FILE is - or missing, and recreates what it holds in
the store exactly: sessions with their metadata, times, sequence numbers
and step JSON, byte for byte; memory blocks with their versions, times and
histories; users' facts with their histories (superseded facts, validity,
record times) and audit logs; recall documents with their metadata and
vectors. The format is in docs/bundle.md.

A bundle (version 2) is read twice: first every record is checked, and a
bad one, a line out of place, or a bundle cut short (without its end line)
stops the import before anything is written; then each record is stored
in one atomic write. An older input, sessions one after another each
starting with its header {"agentmem_export":1,"session":{...}}, is
imported session by session: a session with a bad line, or a log that
does not hold together, is not imported at all, and the others still are;
one whose last entry comes before its header's last_seq is taken as
truncated (--allow-short-log accepts it). A bundle of a newer version is
refused whole. One line per record says what became of it (imported,
failed and why, or skipped), naming the lines of the input it came from;
the exit code is 1 if any failed.

Records are imported into the tenant they were exported from; --tenant
puts every record into another, e.g. those of a server without API keys
(the default tenant) into the tenant of a key (agentmem keys create).

Import is not idempotent by default: a record already in the store (a
session ID in use, a block with its label, a user with facts, a document
ID) fails, is reported, and the rest is imported. --on-conflict skip skips
such records instead, so running an import again finishes one that
stopped part way. --on-conflict new-id imports a session whose ID is in
use under a new ID, and --new-ids gives every session a new one (to copy
sessions into the store they came from); a session's blocks follow it.

Imported sessions are indexed for recall at once (as serve and mcp index
what they store), so 'agentmem recall search' and the server's recall find
them; a server started with --embed-base-url adds their vectors in the
background. A progress bar shows on standard error when it is a terminal
and the input is over 1 MiB (--progress shows it always, --no-progress
never).`,
		Example: `  agentmem import backup.jsonl
  agentmem export --all --store sqlite:///old.db | agentmem import --store postgres://db/agentmem
  agentmem import --new-ids session.jsonl          # a copy beside the original
  agentmem import --tenant acme backup.jsonl       # into the tenant of acme's keys
  agentmem import --on-conflict skip --json backup.jsonl | jq -c 'select(.status == "failed")'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "-"
			if len(args) == 1 {
				path = args[0]
			}
			return runImport(cmd, a, f, path)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.store, "store", "", storeFlagUsage)
	fl.StringVar(&f.tenant, "tenant", "", "import every record into this `TENANT` (the one API keys of that tenant reach) instead of the tenant it was exported from")
	fl.BoolVar(&f.newIDs, "new-ids", false, "import every session under a new ID (a UUIDv7) instead of its exported one")
	fl.StringVar(&f.onConflict, "on-conflict", string(bundle.ConflictFail), "what to do with a record already in the store, `POLICY`: fail (report it, exit 1), skip (report it, exit 0) or new-id (import a session under a new ID)")
	fl.BoolVar(&f.allowShort, "allow-short-log", false, "import a session of a version 1 input whose log ends before its header's last_seq instead of taking it as truncated")
	fl.BoolVar(&f.json, "json", false, "report one JSON object per record instead of text")
	f.progress.AddFlags(fl)
	fl.IntVar(&f.maxLineBytes, "max-line-bytes", bundle.DefaultMaxLineBytes, "the longest line, in `BYTES` (a step is at most 4 MiB as JSON; a compaction line holds copies of steps)")
	return cmd
}

func runImport(cmd *cobra.Command, a *cli.App, f importFlags, path string) error {
	ctx := cmd.Context()
	switch bundle.Conflict(f.onConflict) {
	case bundle.ConflictFail, bundle.ConflictSkip, bundle.ConflictNewID:
	default:
		return cli.Usagef("--on-conflict %q: want fail, skip or new-id", f.onConflict)
	}
	if err := f.progress.Check(); err != nil {
		return err
	}
	if f.maxLineBytes < 1 {
		return cli.Usagef("--max-line-bytes must be positive")
	}
	if f.tenant != "" {
		if err := auth.ValidateTenant(f.tenant); err != nil {
			return cli.Usagef("--tenant: %v", err)
		}
	}
	var (
		in   io.Reader = cmd.InOrStdin()
		name           = "standard input"
	)
	if path == "-" && cli.IsTerminal(in) {
		return cli.Usagef("give the FILE to import: standard input is a terminal")
	}
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return cli.Failure(err)
		}
		defer file.Close()
		in, name = file, path
	}

	storeURL, err := resolveStoreURL(a, f.store)
	if err != nil {
		return err
	}
	st, err := openSessionStore(ctx, a, storeURL, false)
	if err != nil {
		return err
	}
	defer st.Close()
	// Lexical indexing only: the documents are written without vectors,
	// which a server with an embedder adds in the background.
	// The recall view follows the store's log, as serve's does: every
	// imported session is indexed (the command waits for it below).
	follower, mems, done, err := openIndexed(ctx, a, storeURL, st, embedFlags{})
	if err != nil {
		return err
	}
	defer done()

	stderr, out := cmd.ErrOrStderr(), cmd.OutOrStdout()
	size := int64(-1)
	if file, ok := in.(*os.File); ok {
		if fi, err := file.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	bars := &partBars{stderr: stderr, show: func(int) bool {
		return f.progress.Show(cli.IsTerminal(stderr) && (size < 0 || size >= progressMinBytes))
	}}
	opts := bundle.ImportOptions{Tenant: f.tenant, NewIDs: f.newIDs, OnConflict: bundle.Conflict(f.onConflict), AllowShortLog: f.allowShort, MaxLineBytes: f.maxLineBytes,
		Progress: func(p bundle.Phase, read int64) { bars.importing(p, read, size) }}
	to := bundle.Stores{Sessions: st, Facts: mems.facts.Store(), Blocks: mems.blocks.Store(), Recall: mems.recall}
	// On a terminal, a report line must not run into the bar's line.
	clearBar := cli.IsTerminal(out)
	sum, err := bundle.Import(ctx, to, in, opts, func(r bundle.Result) error {
		if clearBar && bars.bar != nil {
			_ = bars.bar.Clear()
		}
		if f.json {
			return json.NewEncoder(out).Encode(r)
		}
		_, err := fmt.Fprintln(out, r.Text())
		return err
	})
	bars.finish()
	if sum.Sessions > 0 {
		if serr := follower.Sync(ctx); serr != nil && err == nil {
			err = cli.Failure(fmt.Errorf("the sessions are imported, but indexing them for recall did not finish: %w (a server on this store finishes it)", serr))
		}
	}
	a.Log.Info("import done", "input", name, "version", sum.Version, "sessions", sum.Sessions, "entries", sum.Entries, "blocks", sum.Blocks,
		"users", sum.Users, "documents", sum.Documents, "failed", sum.Failed, "skipped", sum.Skipped)
	if !f.json && (err == nil || sum.Total() > 0) {
		if _, werr := fmt.Fprintln(out, sum.Text()); werr != nil && err == nil {
			err = werr
		}
	}
	records := "records"
	if sum.Version < bundle.Version {
		records = "sessions"
	}
	if sum.Total() == 1 {
		records = records[:len(records)-1]
	}
	switch {
	case err != nil && sum.Total() > 0:
		return cli.Failure(fmt.Errorf("%w (after %d %s: %s)", err, sum.Total(), records, sum.Text()))
	case errors.Is(err, agentmem.ErrInvalid) && sum.Version == bundle.Version:
		return cli.Failure(fmt.Errorf("%w: nothing was imported", err))
	case err != nil:
		return cli.Failure(err)
	case sum.Failed > 0:
		return cli.Failure(fmt.Errorf("%d of %d %s failed to import", sum.Failed, sum.Total(), records))
	case sum.Total() == 0 && sum.Version < bundle.Version:
		return cli.Failure(fmt.Errorf("%s holds no sessions", name))
	}
	return nil
}

// importing is bundle.ImportOptions.Progress: a bar per phase, over the
// input's size (-1: unknown).
func (b *partBars) importing(p bundle.Phase, read, size int64) {
	if string(p) != b.part {
		b.finish()
		b.part = string(p)
		if b.show(int(size)) {
			if size >= 0 {
				// The last record is stored after it is read: the bar is
				// full only when Finish says the import is.
				size++
			}
			b.bar = cli.NewBar(b.stderr, size, string(p), "")
		}
	}
	if b.bar != nil {
		_ = b.bar.Set64(read)
	}
}
