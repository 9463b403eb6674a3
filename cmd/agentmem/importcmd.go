package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/store"
	"github.com/schollz/progressbar/v3"
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

// Conflict policies of --on-conflict.
const (
	conflictFail  = "fail"
	conflictSkip  = "skip"
	conflictNewID = "new-id"
)

// Import statuses, one per session of the input.
const (
	importImported = "imported"
	importFailed   = "failed"
	importSkipped  = "skipped"
)

const (
	// defaultMaxLineBytes bounds one line of an import, as store.Import
	// does.
	defaultMaxLineBytes = 64 << 20
	// progressMinBytes is the smallest input that gets a progress bar
	// without --progress.
	progressMinBytes = 1 << 20
)

func newImportCmd(a *cli.App) *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import [FILE|-]",
		Short: "Read sessions from a JSONL file",
		Long: `Import reads sessions written by 'agentmem export' (or the store's Export)
from FILE, or from standard input when FILE is - or missing, and recreates
each in the store exactly: its metadata, times, sequence numbers and step
JSON, byte for byte. The input may hold many sessions, one after another,
each starting with its header line {"agentmem_export":1,"session":{...}}.

Each session is checked whole before anything of it is stored, and stored
in one atomic write: a session with a bad line (not JSON, invalid UTF-8, an
unknown step kind, a line cut short) or a log that does not hold together
is not imported at all, and the others still are. A session whose last
entry comes before its header's last_seq is taken as truncated and refused
too (--allow-short-log accepts it). One line per session says what became
of it (imported, failed and why, or skipped), naming the lines of the input
it came from; the exit code is 1 if any session failed.

A session is imported into the tenant it was exported from; --tenant puts
every session into another, e.g. sessions of a server without API keys
(the default tenant) into the tenant of a key (agentmem keys create).

A session is imported under its exported ID; --new-ids gives every session
a new one (to copy sessions into the store they came from). An ID already
in use is a failure, unless --on-conflict says to skip the session or to
import it under a new ID.

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
	fl.StringVar(&f.tenant, "tenant", "", "import every session into this `TENANT` (the one API keys of that tenant reach) instead of the tenant it was exported from")
	fl.BoolVar(&f.newIDs, "new-ids", false, "import every session under a new ID (a UUIDv7) instead of its exported one")
	fl.StringVar(&f.onConflict, "on-conflict", conflictFail, "what to do with a session whose ID is in use, `POLICY`: fail (report it, exit 1), skip (report it, exit 0) or new-id (import it under a new ID)")
	fl.BoolVar(&f.allowShort, "allow-short-log", false, "import a session whose log ends before its header's last_seq instead of taking it as truncated")
	fl.BoolVar(&f.json, "json", false, "report one JSON object per session instead of text")
	f.progress.AddFlags(fl)
	fl.IntVar(&f.maxLineBytes, "max-line-bytes", defaultMaxLineBytes, "the longest line, in `BYTES` (a step is at most 4 MiB as JSON; a compaction line holds copies of steps)")
	return cmd
}

func runImport(cmd *cobra.Command, a *cli.App, f importFlags, path string) error {
	ctx := cmd.Context()
	switch f.onConflict {
	case conflictFail, conflictSkip, conflictNewID:
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
	follower, _, done, err := openIndexed(ctx, a, storeURL, st, embedFlags{})
	if err != nil {
		return err
	}
	defer done()

	stderr := cmd.ErrOrStderr()
	bar := newImportBar(f, in, stderr)
	if bar != nil {
		in = io.TeeReader(in, cli.ProgressSink{Bar: bar})
	}
	out := cmd.OutOrStdout()
	im := &sessionImporter{
		st:         st,
		tenant:     f.tenant,
		newIDs:     f.newIDs,
		onConflict: f.onConflict,
		allowShort: f.allowShort,
		maxLine:    f.maxLineBytes,
	}
	// On a terminal, a report line must not run into the bar's line.
	clearBar := bar != nil && cli.IsTerminal(out)
	var sum importSummary
	err = im.run(ctx, in, func(r importResult) error {
		if clearBar {
			_ = bar.Clear()
		}
		sum.add(r)
		if f.json {
			return json.NewEncoder(out).Encode(r)
		}
		_, err := fmt.Fprintln(out, r.text())
		return err
	})
	if bar != nil {
		_ = bar.Finish() // clears it
	}
	if sum.imported > 0 {
		if serr := follower.Sync(ctx); serr != nil && err == nil {
			err = cli.Failure(fmt.Errorf("the sessions are imported, but indexing them for recall did not finish: %w (a server on this store finishes it)", serr))
		}
	}
	a.Log.Info("import done", "input", name, "imported", sum.imported, "failed", sum.failed, "skipped", sum.skipped, "entries", sum.entries)
	if !f.json {
		if _, werr := fmt.Fprintln(out, sum.text()); werr != nil && err == nil {
			err = werr
		}
	}
	switch {
	case err != nil && sum.total() > 0:
		return cli.Failure(fmt.Errorf("%w (after %d sessions: %s)", err, sum.total(), sum.text()))
	case err != nil:
		return cli.Failure(err)
	case sum.failed > 0:
		return cli.Failure(fmt.Errorf("%d of %s failed to import", sum.failed, plural(sum.total(), "session", "sessions")))
	case sum.total() == 0:
		return cli.Failure(fmt.Errorf("%s holds no sessions", name))
	}
	return nil
}

// newImportBar returns the progress bar of an import, or nil when none is
// to be shown: it shows on a terminal for inputs over progressMinBytes (or
// of unknown size), or always with --progress, never with --no-progress.
func newImportBar(f importFlags, in io.Reader, stderr io.Writer) *progressbar.ProgressBar {
	size := int64(-1)
	if file, ok := in.(*os.File); ok {
		if fi, err := file.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if !f.progress.Show(cli.IsTerminal(stderr) && (size < 0 || size >= progressMinBytes)) {
		return nil
	}
	if size >= 0 {
		// Reading is done before the last session is stored: the bar is
		// full only when Finish says the import is.
		size++
	}
	return cli.NewBar(stderr, size, "importing", "")
}

// importResult is what became of one session of the input.
type importResult struct {
	// Status is imported, failed or skipped.
	Status string `json:"status"`
	// ID is the session's ID in the store (imported sessions), in the
	// tenant Tenant (session IDs are per tenant).
	ID     string `json:"id,omitempty"`
	Tenant string `json:"tenant,omitempty"`
	// SourceID is the session's ID in the input, when its header names
	// one.
	SourceID string `json:"source_id,omitempty"`
	// Entries counts the session's log entries in the input.
	Entries int `json:"entries"`
	// FirstLine and LastLine are the session's lines in the input.
	FirstLine int `json:"first_line"`
	LastLine  int `json:"last_line"`
	// Error says why the session was not imported.
	Error string `json:"error,omitempty"`
}

// text is the result's line of the text report.
func (r importResult) text() string {
	id := r.SourceID
	if id == "" {
		id = "(no session header)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %s", r.Status, id)
	if r.ID != "" && r.ID != r.SourceID {
		fmt.Fprintf(&b, " as %s", r.ID)
	}
	if r.FirstLine == r.LastLine {
		fmt.Fprintf(&b, " (line %d", r.FirstLine)
	} else {
		fmt.Fprintf(&b, " (lines %d-%d", r.FirstLine, r.LastLine)
	}
	if r.SourceID != "" {
		fmt.Fprintf(&b, ", %s", plural(r.Entries, "entry", "entries"))
	}
	b.WriteString(")")
	if r.Error != "" {
		fmt.Fprintf(&b, ": %s", r.Error)
	}
	return b.String()
}

// importSummary counts the results of an import.
type importSummary struct {
	imported, failed, skipped, entries int
}

func (s *importSummary) add(r importResult) {
	switch r.Status {
	case importImported:
		s.imported++
		s.entries += r.Entries
	case importFailed:
		s.failed++
	case importSkipped:
		s.skipped++
	}
}

func (s *importSummary) total() int { return s.imported + s.failed + s.skipped }

func (s *importSummary) text() string {
	return fmt.Sprintf("%s imported (%s), %d failed, %d skipped",
		plural(s.imported, "session", "sessions"), plural(s.entries, "entry", "entries"), s.failed, s.skipped)
}

// plural writes a count with its noun: "1 entry", "2 entries".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// sessionImporter imports the sessions of a stream one by one.
type sessionImporter struct {
	st         store.Store // must implement store.Importer
	tenant     string      // the tenant to import into; "" keeps the exported one
	newIDs     bool
	onConflict string
	allowShort bool
	maxLine    int
}

// run imports every session of r, handing each result to report as soon
// as it is known. It stops at an error reading r, at a report error or
// when ctx is done; a session's bad content is a failed result, not an
// error.
func (im *sessionImporter) run(ctx context.Context, r io.Reader, report func(importResult) error) error {
	sp := newExportSplitter(r, im.maxLine)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := sp.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the input at line %d: %w", sp.line+1, err)
		}
		res, err := im.importChunk(ctx, c)
		if err != nil {
			return err
		}
		if err := report(res); err != nil {
			return err
		}
	}
}

// importChunk imports one session. The error is for what stops the whole
// import (ctx done); a session refused is a result.
func (im *sessionImporter) importChunk(ctx context.Context, c *exportChunk) (importResult, error) {
	res := importResult{SourceID: c.id, Entries: c.entries, FirstLine: c.firstLine, LastLine: c.lastLine}
	fail := func(err error) (importResult, error) {
		res.Status, res.Error = importFailed, err.Error()
		return res, nil
	}
	if c.err != nil {
		return fail(c.err) // its line numbers are the input's already
	}
	if !im.allowShort && c.lastSeq > 0 && c.endSeq >= 0 && c.endSeq < c.lastSeq {
		end := "with no entry"
		if c.endSeq > 0 {
			end = fmt.Sprintf("at seq %d", c.endSeq)
		}
		return fail(fmt.Errorf("the log ends %s but the header's last_seq is %d: the input looks truncated (--allow-short-log imports it anyway)", end, c.lastSeq))
	}
	opts := store.ImportOptions{NewID: im.newIDs, Tenant: im.tenant, MaxLineBytes: im.maxLine}
	s, err := store.Import(ctx, im.st, bytes.NewReader(c.data), opts)
	if errors.Is(err, agentmem.ErrConflict) && !im.newIDs {
		switch im.onConflict {
		case conflictSkip:
			res.Status, res.Error = importSkipped, "the ID is in use"
			return res, nil
		case conflictNewID:
			opts.NewID = true
			s, err = store.Import(ctx, im.st, bytes.NewReader(c.data), opts)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if errors.Is(err, agentmem.ErrConflict) {
			return fail(fmt.Errorf("the ID is in use (--on-conflict skip or new-id, or --new-ids, imports anyway): %w", err))
		}
		return fail(errors.New(inputLines(err, c.firstLine)))
	}
	res.Status, res.ID, res.Tenant = importImported, s.ID, s.Tenant
	return res, nil
}

// inputLines rewrites the line number that starts an error of
// store.Import ("line 3: ..." or "agentmem: invalid line 3: ...", counted
// from the session's header) as a line number of the whole input, and
// gives an error about a log entry ("entries[2]") its line of the input.
func inputLines(err error, firstLine int) string {
	msg := err.Error()
	for _, prefix := range []string{"line ", "agentmem: invalid line "} {
		rest, ok := strings.CutPrefix(msg, prefix)
		if !ok {
			continue
		}
		i := strings.IndexByte(rest, ':')
		if i <= 0 {
			continue
		}
		n, perr := strconv.Atoi(rest[:i])
		if perr != nil || n < 1 {
			continue
		}
		return prefix + strconv.Itoa(firstLine+n-1) + rest[i:]
	}
	// A log that does not hold together names its entry: entries[i] is
	// on the (i+2)th line of the session.
	if _, rest, ok := strings.Cut(msg, "entries["); ok {
		if i := strings.IndexByte(rest, ']'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil && n >= 0 {
				return fmt.Sprintf("line %d: %s", firstLine+n+1, msg)
			}
		}
	}
	return msg
}

// exportChunk is one session's export, cut from a stream that may hold
// several.
type exportChunk struct {
	// data is the chunk's lines, trailing blank lines left out.
	data []byte
	// firstLine and lastLine are its lines in the stream (1-based).
	firstLine, lastLine int
	// id is the session ID its header names; "" when the chunk has no
	// header or the header does not say.
	id string
	// lastSeq is the header's last_seq; -1 when unknown.
	lastSeq int64
	// endSeq is the seq of its last entry line: 0 when it has no entry
	// line, -1 when that line does not say.
	endSeq int64
	// entries counts its non-blank lines after the header.
	entries int
	// err is set when the splitter refuses the chunk itself (a line
	// over the limit, which it does not keep).
	err error
	// last is the offset in data of its last non-blank line, and keep
	// the length of data up to the end of that line.
	last, keep int
	header     bool
}

// exportSplitter cuts a JSONL stream of concatenated exports into one
// chunk per session. A chunk starts at each header line: a line whose
// JSON object has the top-level key "agentmem_export" (or that starts as
// one, so that a header cut short starts a chunk of its own). Lines before
// the first header form a chunk without header, which store.Import
// refuses. Blank lines between sessions are dropped.
type exportSplitter struct {
	br      *bufio.Reader
	maxLine int
	// line counts the lines read.
	line int
	// ahead is a header line read ahead, which starts the next chunk.
	ahead     []byte
	aheadLine int
	eof       bool
}

func newExportSplitter(r io.Reader, maxLine int) *exportSplitter {
	if maxLine <= 0 {
		maxLine = defaultMaxLineBytes
	}
	return &exportSplitter{br: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine}
}

// errSplitLineTooLong is a line over the splitter's limit.
var errSplitLineTooLong = errors.New("line too long")

// next returns the next chunk, or io.EOF after the last. Other errors
// are the reader's.
func (sp *exportSplitter) next() (*exportChunk, error) {
	var c *exportChunk
	if sp.ahead != nil {
		c = newChunk(sp.aheadLine)
		c.addHeader(sp.ahead)
		sp.ahead = nil
	}
	for !sp.eof {
		line, err := sp.readLine()
		switch {
		case err == io.EOF:
			sp.eof = true
			if len(line) == 0 {
				continue
			}
		case errors.Is(err, errSplitLineTooLong):
			sp.line++
			if c == nil {
				c = newChunk(sp.line)
			}
			if c.err == nil {
				c.err = fmt.Errorf("line %d: is longer than %d bytes (see --max-line-bytes)", sp.line, sp.maxLine)
			}
			c.lastLine, c.entries = sp.line, c.entries+1
			continue
		case err != nil:
			return nil, err
		}
		sp.line++
		if isExportHeader(line) {
			if c != nil {
				sp.ahead, sp.aheadLine = line, sp.line
				break
			}
			c = newChunk(sp.line)
			c.addHeader(line)
			continue
		}
		if c == nil {
			if len(bytes.TrimSpace(line)) == 0 {
				continue // blank lines between sessions
			}
			c = newChunk(sp.line)
		}
		c.addLine(line, sp.line)
	}
	if c == nil {
		return nil, io.EOF
	}
	c.finish()
	return c, nil
}

// readLine reads one line, newline included, of at most maxLine bytes. A
// longer line is read to its end and dropped: errSplitLineTooLong.
func (sp *exportSplitter) readLine() ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := sp.br.ReadSlice('\n')
		if !tooLong && len(line)+len(chunk) > sp.maxLine {
			tooLong, line = true, nil
		}
		if !tooLong {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if tooLong && (err == nil || err == io.EOF) {
			if err == io.EOF {
				sp.eof = true
			}
			return nil, errSplitLineTooLong
		}
		return line, err
	}
}

func newChunk(line int) *exportChunk {
	return &exportChunk{firstLine: line, lastLine: line, lastSeq: -1, endSeq: 0}
}

// addHeader starts the chunk with its header line.
func (c *exportChunk) addHeader(line []byte) {
	c.header = true
	c.data = append(c.data, line...)
	c.keep = len(c.data)
	var h struct {
		Session *struct {
			ID      string `json:"id"`
			LastSeq *int64 `json:"last_seq"`
		} `json:"session"`
	}
	if json.Unmarshal(line, &h) == nil && h.Session != nil {
		c.id = h.Session.ID
		if h.Session.LastSeq != nil {
			c.lastSeq = *h.Session.LastSeq
		}
	}
}

// addLine adds an entry line (or a line that should be one).
func (c *exportChunk) addLine(line []byte, n int) {
	start := len(c.data)
	c.data = append(c.data, line...)
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	c.entries++
	c.last, c.keep, c.lastLine = start, len(c.data), n
}

// finish drops the trailing blank lines and reads the last entry's seq.
func (c *exportChunk) finish() {
	c.data = c.data[:c.keep]
	if c.entries == 0 || !c.header {
		return
	}
	var e struct {
		Seq *int64 `json:"seq"`
	}
	if err := json.Unmarshal(c.data[c.last:], &e); err != nil || e.Seq == nil {
		c.endSeq = -1
		return
	}
	c.endSeq = *e.Seq
}

// exportHeaderKey is the key that marks an export's header line.
var exportHeaderKey = []byte(`"agentmem_export"`)

// isExportHeader reports whether line is an export header: its JSON
// object has the top-level key "agentmem_export", or it starts with it
// (a header cut short is still one).
func isExportHeader(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r\n")
	if t, ok := bytes.CutPrefix(t, []byte("{")); ok && bytes.HasPrefix(bytes.TrimLeft(t, " \t"), exportHeaderKey) {
		return true
	}
	if !bytes.Contains(line, exportHeaderKey) {
		return false
	}
	var h struct {
		Version json.RawMessage `json:"agentmem_export"`
	}
	return json.Unmarshal(line, &h) == nil && h.Version != nil
}
