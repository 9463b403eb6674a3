package bundle

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
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
)

// Conflict is what Import does with a record already in the store.
type Conflict string

// The conflict policies.
const (
	// ConflictFail reports the record failed, and imports the others.
	ConflictFail Conflict = "fail"
	// ConflictSkip reports the record skipped: a second run of an import
	// skips what the first imported.
	ConflictSkip Conflict = "skip"
	// ConflictNewID imports a session under a new ID (a UUIDv7), its
	// blocks with it; other records fail as with ConflictFail.
	ConflictNewID Conflict = "new-id"
)

// Status is what became of a record.
type Status string

// The statuses of a Result.
const (
	Imported Status = "imported"
	Failed   Status = "failed"
	Skipped  Status = "skipped"
)

// Phase is what an import is doing, for its progress.
type Phase string

// The phases of an import.
const (
	// Checking is the first pass over a version 2 bundle: every record
	// is read and checked, and nothing is written.
	Checking Phase = "checking"
	// Importing is the pass that writes.
	Importing Phase = "importing"
)

// ImportOptions configures Import.
type ImportOptions struct {
	// Tenant, when set, is the tenant every record is imported into
	// instead of the one it was exported from.
	Tenant string
	// NewIDs imports every session under a new ID (a UUIDv7), with its
	// blocks, so that sessions can be copied into the store they came
	// from.
	NewIDs bool
	// OnConflict is what to do with a record already in the store; ""
	// means ConflictFail.
	OnConflict Conflict
	// AllowShortLog imports a session of a version 1 input whose log
	// ends before its header's last_seq, which is otherwise taken as
	// cut short. (A version 2 bundle knows it is whole from its end
	// line.)
	AllowShortLog bool
	// MaxLineBytes bounds one line; 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// TempDir is where a version 2 bundle read from an input that
	// cannot seek (a pipe) is kept between its two passes; "" means
	// os.TempDir().
	TempDir string
	// Progress, when set, is called as the input is read, with the
	// phase and the bytes of the input read in it.
	Progress func(phase Phase, read int64)
}

// Result is what became of one record of the input: a session, a block,
// a user's facts or a document.
type Result struct {
	// Kind is KindSession, KindBlock, KindFacts or KindDocument.
	Kind   string `json:"kind"`
	Status Status `json:"status"`
	// ID is the record's ID in the store: a session's, a block's label,
	// the user's ID of facts, a document's. Empty when the record failed
	// before it was read.
	ID     string `json:"id,omitempty"`
	Tenant string `json:"tenant,omitempty"`
	// Owner is a block's owner: "user alice", "session s1".
	Owner string `json:"owner,omitempty"`
	// SourceID is the record's ID in the input, when it names one.
	SourceID string `json:"source_id,omitempty"`
	// Entries counts the record's lines after its first: a session's
	// log entries, a block's changes, a user's facts and audit entries.
	Entries int `json:"entries"`
	// FirstLine and LastLine are the record's lines in the input.
	FirstLine int `json:"first_line"`
	LastLine  int `json:"last_line"`
	// Error says why the record was not imported.
	Error string `json:"error,omitempty"`
}

// Text is the result as a line of a report: the status, what the record
// is, its lines and why it was not imported.
func (r Result) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s ", r.Status)
	id := r.SourceID
	switch r.Kind {
	case KindBlock:
		fmt.Fprintf(&b, "block %s of %s", id, r.Owner)
	case KindFacts:
		fmt.Fprintf(&b, "facts of user %s", id)
	case KindDocument:
		fmt.Fprintf(&b, "document %s", id)
	default:
		if id == "" {
			id = "(no session header)"
		}
		b.WriteString(id)
	}
	if r.ID != "" && r.ID != r.SourceID {
		fmt.Fprintf(&b, " as %s", r.ID)
	}
	if r.Kind != KindSession && r.Tenant != "" {
		fmt.Fprintf(&b, " in tenant %s", r.Tenant)
	}
	if r.FirstLine == r.LastLine {
		fmt.Fprintf(&b, " (line %d", r.FirstLine)
	} else {
		fmt.Fprintf(&b, " (lines %d-%d", r.FirstLine, r.LastLine)
	}
	switch {
	case r.Kind == KindSession && r.SourceID != "":
		fmt.Fprintf(&b, ", %s", plural(r.Entries, "entry", "entries"))
	case r.Kind == KindBlock:
		fmt.Fprintf(&b, ", %s", plural(r.Entries, "change", "changes"))
	case r.Kind == KindFacts:
		fmt.Fprintf(&b, ", %s", plural(r.Entries, "fact and audit entry", "facts and audit entries"))
	}
	b.WriteString(")")
	if r.Error != "" {
		fmt.Fprintf(&b, ": %s", r.Error)
	}
	return b.String()
}

// Summary counts what an import did.
type Summary struct {
	// Version is the input's format version (1 for a stream of session
	// exports, or an input that is none).
	Version int
	// Sessions, Entries, Blocks, Users and Documents count what was
	// imported: sessions and their log entries, blocks, users' facts,
	// documents.
	Sessions, Entries, Blocks, Users, Documents int
	// Failed and Skipped count records of every kind.
	Failed, Skipped int
}

// Total is the number of records the import reported.
func (s Summary) Total() int {
	return s.Sessions + s.Blocks + s.Users + s.Documents + s.Failed + s.Skipped
}

func (s *Summary) add(r Result) {
	switch r.Status {
	case Failed:
		s.Failed++
	case Skipped:
		s.Skipped++
	case Imported:
		switch r.Kind {
		case KindSession:
			s.Sessions++
			s.Entries += r.Entries
		case KindBlock:
			s.Blocks++
		case KindFacts:
			s.Users++
		case KindDocument:
			s.Documents++
		}
	}
}

// Text is the summary as the last line of a report.
func (s Summary) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s imported (%s)", plural(s.Sessions, "session", "sessions"), plural(s.Entries, "entry", "entries"))
	if s.Blocks+s.Users+s.Documents > 0 {
		fmt.Fprintf(&b, ", %s, facts of %s, %s", plural(s.Blocks, "block", "blocks"), plural(s.Users, "user", "users"), plural(s.Documents, "document", "documents"))
	}
	fmt.Fprintf(&b, ", %d failed, %d skipped", s.Failed, s.Skipped)
	return b.String()
}

// plural writes a count with its noun: "1 entry", "2 entries".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Import reads a bundle written by Export, or a version 1 stream of
// session exports (store.Export's, one after another), and recreates what
// it holds in to, exactly: IDs, times, versions, histories, validity. It
// calls report with the result of each record as soon as it is known,
// and returns the summary.
//
// A version 2 bundle is read twice. First every record is read and
// checked as its import would check it, and nothing is written. A bad
// record, a line out of place or a bundle cut short (without its end
// line, or whose end line does not count what it holds) is an error
// wrapping agentmem.ErrInvalid that names the line; nothing is imported.
// Then each record is written in one atomic write of its
// store: a session with its log, a block with its history, a user's
// facts with their audit log, documents in batches. A record already in
// the store is handled as opts.OnConflict says. An input that cannot
// seek is kept in a temporary file between the passes.
//
// A version 1 stream is imported session by session as it is read: a
// session that is bad is a failed result, and the others are imported.
//
// A bundle of a newer version is a *VersionError, and nothing is
// imported. The error is for what stops the whole import (bad input of a
// version 2 bundle, a failure to read, report's error, ctx done); a
// record refused is a result.
func Import(ctx context.Context, to Stores, r io.Reader, opts ImportOptions, report func(Result) error) (Summary, error) {
	var sum Summary
	switch opts.OnConflict {
	case "":
		opts.OnConflict = ConflictFail
	case ConflictFail, ConflictSkip, ConflictNewID:
	default:
		return sum, &agentmem.InvalidError{Field: "on_conflict", Reason: fmt.Sprintf("%q: want fail, skip or new-id", opts.OnConflict)}
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.Progress == nil {
		opts.Progress = func(Phase, int64) {}
	}
	if to.Sessions == nil {
		return sum, errors.New("bundle: import: Stores.Sessions is required")
	}
	// A file that can seek is read again from here.
	var start int64 = -1
	if rs, ok := r.(io.ReadSeeker); ok {
		if off, err := rs.Seek(0, io.SeekCurrent); err == nil {
			start = off
		}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, version, err := sniff(br, opts.MaxLineBytes)
	if err != nil {
		return sum, err
	}
	sum.Version = version
	if version > Version {
		return sum, &VersionError{Version: version}
	}
	in := io.MultiReader(bytes.NewReader(head), br)
	report2 := func(res Result) error {
		sum.add(res)
		return report(res)
	}
	if version < Version {
		sum.Version = 1
		im := &v1Importer{st: to.Sessions, opts: opts}
		return sum, im.run(ctx, &progressReader{r: in, fn: func(n int64) { opts.Progress(Importing, n) }}, report2)
	}

	im := &importer{to: to, opts: opts, sessions: map[store.Key]sessionOutcome{}}
	// The first pass checks everything; the second, over the same bytes,
	// writes.
	var again func() (io.Reader, error)
	if start >= 0 {
		rs := r.(io.ReadSeeker)
		again = func() (io.Reader, error) {
			_, err := rs.Seek(start, io.SeekStart)
			return rs, err
		}
	} else {
		spool, err := os.CreateTemp(opts.TempDir, "agentmem-import-*.jsonl")
		if err != nil {
			return sum, fmt.Errorf("bundle: import: a temporary file for the input: %w", err)
		}
		defer func() {
			spool.Close()
			os.Remove(spool.Name())
		}()
		in = io.TeeReader(in, spool)
		again = func() (io.Reader, error) {
			_, err := spool.Seek(0, io.SeekStart)
			return spool, err
		}
	}
	if err := im.pass(ctx, in, Checking, nil); err != nil {
		return sum, err
	}
	in, err = again()
	if err != nil {
		return sum, fmt.Errorf("bundle: import: reading the input again: %w", err)
	}
	return sum, im.pass(ctx, in, Importing, report2)
}

// sniff reads the input's first line that is not blank and returns what
// it read (to be read again) and the format version the line names: 0
// when it names none.
func sniff(br *bufio.Reader, maxLine int) ([]byte, int, error) {
	var head []byte
	for {
		start := len(head)
		chunk, err := br.ReadSlice('\n')
		head = append(head, chunk...)
		for err == bufio.ErrBufferFull && len(head)-start <= maxLine {
			chunk, err = br.ReadSlice('\n')
			head = append(head, chunk...)
		}
		line := head[start:]
		switch {
		case err == bufio.ErrBufferFull:
			return head, 0, nil // too long for a header
		case err != nil && err != io.EOF:
			return nil, 0, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			if err == io.EOF {
				return head, 0, nil
			}
			continue
		}
		var h struct {
			Version json.RawMessage `json:"agentmem_export"`
		}
		if json.Unmarshal(line, &h) != nil || h.Version == nil {
			return head, 0, nil
		}
		v, err := strconv.Atoi(string(h.Version))
		if err != nil || v < 1 {
			return head, 0, nil
		}
		return head, v, nil
	}
}

// progressReader calls fn with the bytes read so far after each read.
type progressReader struct {
	r  io.Reader
	n  int64
	fn func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.fn(p.n)
	return n, err
}

// sessionOutcome is what became of a session of the input, for its
// blocks.
type sessionOutcome struct {
	status Status
	// id is the session's ID in the store, once imported.
	id string
}

// importer imports the records of a version 2 bundle.
type importer struct {
	to   Stores
	opts ImportOptions
	// sessions are the outcomes of the input's sessions, by their key in
	// the input.
	sessions map[store.Key]sessionOutcome
	// docs are the documents waiting to be written, with their results.
	docs    []recall.Doc
	docRes  []Result
	docIDs  map[string]bool
	report  func(Result) error
	writing bool
}

// docBatch is how many documents are written at a time.
const docBatch = 100

// pass reads the bundle through. Checking, it checks each record and
// writes nothing; importing, it writes each and reports it.
func (im *importer) pass(ctx context.Context, r io.Reader, phase Phase, report func(Result) error) error {
	im.writing, im.report = phase == Importing, report
	d := newDecoder(r, im.opts.MaxLineBytes)
	if _, err := d.readHeader(); err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := d.nextRecord()
		im.opts.Progress(phase, d.read)
		if err != nil {
			if im.writing {
				// The first pass read it whole: the input changed, or
				// could not be read again.
				return fmt.Errorf("bundle: import: reading the input again: %w", err)
			}
			return err
		}
		if rec == nil {
			if im.writing {
				return im.flushDocs(ctx)
			}
			return nil
		}
		if rec.kind == kindEnd {
			continue
		}
		if !im.writing {
			if err := im.check(rec); err != nil {
				return recordErr(rec, err)
			}
			continue
		}
		if err := im.write(ctx, rec); err != nil {
			return err
		}
	}
}

// check checks a record as its import will, and that the store can
// import it.
func (im *importer) check(rec *record) error {
	im.retarget(rec)
	switch rec.kind {
	case KindSession:
		if !im.to.Sessions.Supports(store.CanImport) {
			return fmt.Errorf("the session store %T cannot import sessions (store.Importer): %w", im.to.Sessions, errors.ErrUnsupported)
		}
		_, err := store.ImportSession(context.Background(), im.to.Sessions, rec.session.Clone(), rec.entries, store.ImportOptions{CheckOnly: true})
		return err
	case KindBlock:
		if _, ok := im.to.Blocks.(blocks.Importer); !ok {
			return fmt.Errorf("the bundle holds memory blocks, which this store cannot import (blocks.Importer): %w", errors.ErrUnsupported)
		}
		return blocks.CheckImport(rec.block, rec.history)
	case KindFacts:
		if _, ok := im.to.Facts.(facts.Importer); !ok {
			return fmt.Errorf("the bundle holds facts, which this store cannot import (facts.Importer): %w", errors.ErrUnsupported)
		}
		return facts.CheckImport(rec.tenant, rec.user, rec.facts, rec.audit)
	case KindDocument:
		if im.to.Recall == nil {
			return fmt.Errorf("the bundle holds recall documents, and there is no recall index to import them into: %w", errors.ErrUnsupported)
		}
		_, err := recall.CheckDoc(rec.doc)
		return err
	}
	return nil
}

// retarget puts the record into the tenant of the options, if any.
func (im *importer) retarget(rec *record) {
	t := im.opts.Tenant
	if t == "" {
		return
	}
	switch rec.kind {
	case KindSession:
		rec.session.Tenant = t
	case KindBlock:
		rec.block.Tenant = t
	case KindFacts:
		rec.tenant = t
		for i := range rec.facts {
			rec.facts[i].Tenant = t
		}
		for i := range rec.audit {
			rec.audit[i].Tenant = t
		}
	case KindDocument:
		rec.doc.Tenant = t
	}
}

// write imports a record and reports it (documents in batches).
func (im *importer) write(ctx context.Context, rec *record) error {
	if rec.kind != KindDocument {
		if err := im.flushDocs(ctx); err != nil {
			return err
		}
	}
	// The key in the input, before --tenant moves it.
	var srcKey store.Key
	if rec.kind == KindSession {
		srcKey = rec.session.Key()
	}
	blockOwner := rec.block.Owner
	srcTenant := rec.block.Tenant
	im.retarget(rec)
	res := Result{Kind: rec.kind, Entries: rec.lines(), FirstLine: rec.firstLine, LastLine: rec.lastLine}
	var err error
	switch rec.kind {
	case KindSession:
		res.SourceID = srcKey.ID
		err = im.writeSession(ctx, rec, srcKey, &res)
	case KindBlock:
		res.SourceID, res.Owner = rec.block.Label, blockOwner.String()
		err = im.writeBlock(ctx, rec, srcTenant, &res)
	case KindFacts:
		res.SourceID = rec.user
		err = im.writeFacts(ctx, rec, &res)
	case KindDocument:
		return im.addDoc(ctx, rec)
	}
	if err != nil {
		return err
	}
	return im.report(res)
}

// settle sets the result of a write that failed: skipped or failed by
// the conflict policy when err is a conflict (conflict says what it is),
// failed with err otherwise. Its error is for what stops the import (ctx
// done).
func (im *importer) settle(ctx context.Context, res *Result, err error, conflict string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	res.ID = ""
	switch {
	case errors.Is(err, agentmem.ErrConflict) && im.opts.OnConflict == ConflictSkip:
		res.Status, res.Error = Skipped, conflict
	case errors.Is(err, agentmem.ErrConflict):
		res.Status, res.Error = Failed, fmt.Sprintf("%s (--on-conflict skip skips it): %v", conflict, err)
	default:
		res.Status, res.Error = Failed, err.Error()
	}
	return nil
}

func (im *importer) writeSession(ctx context.Context, rec *record, src store.Key, res *Result) error {
	opts := store.ImportOptions{NewID: im.opts.NewIDs}
	s, err := store.ImportSession(ctx, im.to.Sessions, rec.session, rec.entries, opts)
	if errors.Is(err, agentmem.ErrConflict) && !im.opts.NewIDs && im.opts.OnConflict == ConflictNewID {
		opts.NewID = true
		s, err = store.ImportSession(ctx, im.to.Sessions, rec.session, rec.entries, opts)
	}
	if err != nil {
		if errors.Is(err, agentmem.ErrConflict) && im.opts.OnConflict != ConflictSkip {
			// As a version 1 import says it.
			err = fmt.Errorf("the ID is in use (--on-conflict skip or new-id, or --new-ids, imports anyway): %w", err)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			res.Status, res.Error = Failed, err.Error()
		} else if err := im.settle(ctx, res, err, "the ID is in use"); err != nil {
			return err
		}
		im.sessions[src] = sessionOutcome{status: res.Status}
		return nil
	}
	im.sessions[src] = sessionOutcome{status: Imported, id: s.ID}
	res.Status, res.ID, res.Tenant = Imported, s.ID, s.Tenant
	return nil
}

func (im *importer) writeBlock(ctx context.Context, rec *record, srcTenant string, res *Result) error {
	b := rec.block
	res.Tenant = b.Tenant
	if b.Owner.Kind == blocks.OwnerSession {
		if o, ok := im.sessions[store.Key{Tenant: srcTenant, ID: b.Owner.ID}]; ok {
			switch o.status {
			case Imported:
				b.Owner.ID = o.id
				res.Owner = b.Owner.String()
			case Failed:
				res.Status, res.Error = Failed, fmt.Sprintf("its session %s was not imported", b.Owner.ID)
				return nil
			}
		}
	}
	err := im.to.Blocks.(blocks.Importer).ImportBlock(ctx, b, rec.history)
	if err != nil {
		return im.settle(ctx, res, err, "the block exists already")
	}
	res.Status, res.ID = Imported, b.Label
	return nil
}

func (im *importer) writeFacts(ctx context.Context, rec *record, res *Result) error {
	res.Tenant = rec.tenant
	err := im.to.Facts.(facts.Importer).ImportUser(ctx, rec.tenant, rec.user, rec.facts, rec.audit)
	if err != nil {
		return im.settle(ctx, res, err, "the user has facts already")
	}
	res.Status, res.ID = Imported, rec.user
	return nil
}

// addDoc queues a document, writing the queue first when it is full,
// of another tenant or holds the same ID.
func (im *importer) addDoc(ctx context.Context, rec *record) error {
	d := rec.doc
	if len(im.docs) >= docBatch || len(im.docs) > 0 && im.docs[0].Tenant != d.Tenant || im.docIDs[d.ID] {
		if err := im.flushDocs(ctx); err != nil {
			return err
		}
	}
	if im.docIDs == nil {
		im.docIDs = map[string]bool{}
	}
	im.docIDs[d.ID] = true
	im.docs = append(im.docs, d)
	im.docRes = append(im.docRes, Result{Kind: KindDocument, SourceID: d.ID, Tenant: d.Tenant, FirstLine: rec.firstLine, LastLine: rec.lastLine})
	return nil
}

// flushDocs writes the queued documents that are not in the index yet,
// in one write, and reports each.
func (im *importer) flushDocs(ctx context.Context) error {
	if len(im.docs) == 0 {
		return nil
	}
	docs, results := im.docs, im.docRes
	im.docs, im.docRes, im.docIDs = nil, nil, nil
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	fail := func(idx []int, err error, conflict string) error {
		for _, i := range idx {
			if err := im.settle(ctx, &results[i], err, conflict); err != nil {
				return err
			}
		}
		return nil
	}
	all := make([]int, len(docs))
	for i := range all {
		all[i] = i
	}
	have, err := im.to.Recall.Backend().Get(ctx, docs[0].Tenant, ids...)
	if err != nil {
		if err := fail(all, err, ""); err != nil {
			return err
		}
	} else {
		there := map[string]bool{}
		for _, d := range have {
			there[d.ID] = true
		}
		var (
			put []recall.Doc
			idx []int
		)
		for i, d := range docs {
			if there[d.ID] {
				if err := fail([]int{i}, fmt.Errorf("recall: document %q: %w", d.ID, agentmem.ErrConflict), "the document exists already"); err != nil {
					return err
				}
				continue
			}
			put, idx = append(put, d), append(idx, i)
		}
		if len(put) > 0 {
			if err := im.to.Recall.Upsert(ctx, put...); err != nil {
				if err := fail(idx, err, ""); err != nil {
					return err
				}
			} else {
				for _, i := range idx {
					results[i].Status, results[i].ID = Imported, results[i].SourceID
				}
			}
		}
	}
	for _, r := range results {
		if err := im.report(r); err != nil {
			return err
		}
	}
	return nil
}
