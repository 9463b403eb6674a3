package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/jsoncheck"
)

// ExportVersion is the version of the JSONL export format.
const ExportVersion = 1

// Importer is implemented by stores that can recreate a session exactly,
// which Import needs (Append assigns sequence numbers and times itself, so
// it cannot restore them). Every backend implements it.
type Importer interface {
	// ImportEntries creates session s with its log, in one atomic write.
	// The session keeps every field as given: ID, tenant, user, agent,
	// metadata, retention, ExpiresAt, CreatedAt, UpdatedAt and LastSeq. The
	// entries keep their Seq, Kind, Time, step and compaction record; a
	// step is stored as EncodeStep's bytes, so an export reads back byte
	// for byte.
	// s.ParentID is empty: an imported session carries its whole history.
	//
	// Store.ImportEntries checks s and entries before it is called (a
	// valid session and a log that fits it) and refuses bad ones with
	// ErrInvalid; an ID already in use (even by an expired session) is
	// ErrConflict. On error nothing is stored. The importer must not keep
	// s or entries (it copies what it stores).
	ImportEntries(ctx context.Context, s *Session, entries []Entry) error
}

// validateImport checks a session and its log for Importer.ImportEntries.
// The session must be valid (ValidateSession) and have no parent. Entries
// have strictly increasing positive sequence numbers up to s.LastSeq. A
// step entry holds a valid step with an ID unique in the log, at most
// MaxStepBytes as JSON, whose number is the entry's Seq. A compaction entry
// holds a valid record (validateCompaction) that names only earlier
// sequence numbers. Its replaced copies are of earlier step entries when
// those are present; an amendment's copies are only of steps of the working
// set as of the entry. No entry time or session time is zero.
// Errors wrap agentmem.ErrInvalid and name the entry.
func validateImport(s *Session, entries []Entry) error {
	if err := ValidateSession(s); err != nil {
		return err
	}
	if s.ParentID != "" || s.ForkSeq != 0 {
		return invalid("session.parent_id", "an imported session has no parent: its log carries its whole history")
	}
	if s.CreatedAt.IsZero() || s.UpdatedAt.IsZero() {
		return invalid("session.created_at", "session times are required")
	}
	var prev int64
	ids := make(map[string]int64, len(entries))
	steps := make(map[int64]agentmem.Step, len(entries))
	// The working set's steps as of each entry: an amendment's copies
	// must stand in for some of them.
	working := map[int64]bool{}
	for i, e := range entries {
		f := fmt.Sprintf("entries[%d]", i)
		if e.Seq <= prev {
			return invalid(f+".seq", "%d does not follow %d", e.Seq, prev)
		}
		if e.Seq > s.LastSeq {
			return invalid(f+".seq", "%d is after the session's last_seq %d", e.Seq, s.LastSeq)
		}
		prev = e.Seq
		if e.Time.IsZero() {
			return invalid(f+".time", "is required")
		}
		switch e.Kind {
		case StepEntry:
			if e.Compaction != nil {
				return invalid(f, "a step entry with a compaction record")
			}
			if _, err := validateStep(f+".step", e.Step); err != nil {
				return err
			}
			if n := e.Step.Info().Number; int64(n) != e.Seq {
				return invalid(f+".step.number", "%d is not the entry's seq %d", n, e.Seq)
			}
			id := e.Step.Info().ID
			if seq, dup := ids[id]; dup {
				return invalid(f+".step.id", "%q is also the ID of the step at seq %d", id, seq)
			}
			ids[id] = e.Seq
			steps[e.Seq] = e.Step
			working[e.Seq] = true
		case CompactionEntry:
			if e.Step != nil {
				return invalid(f, "a compaction entry with a step")
			}
			if err := validateCompaction(e.Compaction, 0); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			for k, seq := range e.Compaction.Working {
				if seq >= e.Seq {
					return invalid(fmt.Sprintf("%s.compaction.working[%d]", f, k), "%d is not before the compaction's seq %d", seq, e.Seq)
				}
			}
			for k, r := range e.Compaction.Replaced {
				n := int64(r.Info().Number)
				if e.Compaction.Amend && !working[n] {
					return invalid(fmt.Sprintf("%s.compaction.replaced[%d].number", f, k), "%d is not a step of the working set: an amendment replaces steps the working set has", n)
				}
				if o, ok := steps[n]; ok && (o.Info().ID != r.Info().ID || o.Kind() != r.Kind()) {
					return invalid(fmt.Sprintf("%s.compaction.replaced[%d]", f, k), "is not a copy of step %d (the ID or kind differs)", r.Info().Number)
				}
			}
			if !e.Compaction.Amend {
				working = make(map[int64]bool, len(e.Compaction.Working))
				for _, n := range e.Compaction.Working {
					working[n] = true
				}
			}
		default:
			return invalid(f+".kind", "unknown entry kind %q", e.Kind)
		}
	}
	return nil
}

// exportHeader is the first line of an export.
type exportHeader struct {
	Version *int     `json:"agentmem_export"`
	Session *Session `json:"session"`
}

// exportLine is one entry of an export.
type exportLine struct {
	Seq        int64           `json:"seq"`
	Kind       EntryKind       `json:"kind"`
	Time       time.Time       `json:"time"`
	Step       json.RawMessage `json:"step,omitempty"`
	Compaction json.RawMessage `json:"compaction,omitempty"`
}

// exportPage is how many entries Export reads at a time.
const exportPage = 1000

// Export writes the session of a tenant with this ID as JSONL. First comes
// a header line:
//
//	{"agentmem_export":1,"session":{"id":"...","retention":"session",...}}
//
// Then comes one line per entry of the session's visible log, in order (a
// branch's inherited history included, so the export stands alone):
//
//	{"seq":1,"kind":"step","time":"...","step":{"type":"task",...}}
//	{"seq":7,"kind":"compaction","time":"...","compaction":{"working":[...],...}}
//
// Steps are written in EncodeStep's bytes, so Import recreates them byte
// for byte. The log is read in pages; entries appended after the first
// page was read are left out, so the export is the session as of its
// header. Times are written in UTC.
func Export(ctx context.Context, st *Store, tenant, sessionID string, w io.Writer) error {
	bw := bufio.NewWriter(w)
	err := ExportLog(ctx, st, tenant, sessionID, func(s *Session) error {
		v := ExportVersion
		b, err := json.Marshal(exportHeader{Version: &v, Session: s})
		if err != nil {
			return err
		}
		return writeLine(bw, b)
	}, func(e Entry) error {
		b, err := EncodeEntry(e)
		if err != nil {
			return fmt.Errorf("export session %s: seq %d: %w", sessionID, e.Seq, err)
		}
		return writeLine(bw, b)
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// ExportLog reads the session of a tenant with this ID as Export writes it,
// for an export in another form. It calls session once with the session as
// Export's header holds it: without a parent, since its log holds the
// history it inherited, and with times in UTC. Then it calls entry with
// each entry of the visible log, in order, up to the LastSeq read with the
// first page. An error of session or entry stops it and is returned.
func ExportLog(ctx context.Context, st *Store, tenant, sessionID string, session func(*Session) error, entry func(Entry) error) error {
	var last, after int64
	for first := true; ; first = false {
		resp, err := st.Read(ctx, ReadRequest{Tenant: tenant, SessionID: sessionID, After: after, Limit: exportPage})
		if err != nil {
			return err
		}
		if first {
			last = resp.Session.LastSeq
			s := resp.Session.Clone()
			s.ParentID, s.ForkSeq = "", 0 // the export carries the inherited history
			s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
			if !s.ExpiresAt.IsZero() {
				s.ExpiresAt = s.ExpiresAt.UTC()
			}
			if err := session(s); err != nil {
				return err
			}
		}
		for _, e := range resp.Entries {
			if e.Seq > last {
				return nil
			}
			if err := entry(e); err != nil {
				return err
			}
			after = e.Seq
		}
		if len(resp.Entries) < exportPage {
			return nil
		}
	}
}

// EncodeEntry returns an entry as a line of an export, without its
// newline: {"seq":1,"kind":"step","time":"...","step":{...}}, the step in
// EncodeStep's bytes, or a compaction entry's record in
// EncodeCompaction's; the time in UTC. DecodeEntry reads it back.
func EncodeEntry(e Entry) ([]byte, error) {
	l := exportLine{Seq: e.Seq, Kind: e.Kind, Time: e.Time.UTC()}
	var err error
	switch e.Kind {
	case StepEntry:
		l.Step, err = EncodeStep(e.Step)
	case CompactionEntry:
		l.Compaction, err = EncodeCompaction(e.Compaction)
	default:
		err = fmt.Errorf("unknown entry kind %q", e.Kind)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(l)
}

func writeLine(w *bufio.Writer, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.WriteByte('\n')
}

// ImportOptions configures Import.
type ImportOptions struct {
	// ID, when set, is the ID the session is imported under instead of
	// the exported one.
	ID string
	// NewID imports the session under a new ID (a UUIDv7), so a session
	// can be copied into the store it came from. ID wins over NewID.
	NewID bool
	// Tenant, when set, is the tenant the session is imported into instead
	// of the exported one: sessions exported from a store without API keys
	// belong to the default tenant "", which no key can reach.
	Tenant string
	// Progress, when set, is called after each line read with the number
	// of lines and bytes read so far (for a progress bar).
	Progress func(lines int, bytes int64)
	// MaxLineBytes bounds one line; 0 means 64 MiB. A step is at most
	// MaxStepBytes, but a compaction line holds its replaced copies.
	MaxLineBytes int
	// CheckOnly checks the session as an import would, and writes
	// nothing: the returned session is what would be stored.
	CheckOnly bool
}

// Import reads a session exported by Export and recreates it in st with the
// same sequence numbers, entry times and step JSON, byte for byte, under the
// exported ID unless opts asks for another. The whole input is read and
// checked first (a bad line is an error naming it, wrapping
// agentmem.ErrInvalid) and then stored in one atomic write, so an import that
// fails stores nothing. st's driver must implement Importer; an ID in use is
// ErrConflict.
func Import(ctx context.Context, st *Store, r io.Reader, opts ImportOptions) (*Session, error) {
	if !st.Supports(CanImport) && !opts.CheckOnly {
		return nil, notImporter(st)
	}
	s, entries, err := readExport(ctx, r, opts)
	if err != nil {
		return nil, err
	}
	return ImportSession(ctx, st, s, entries, opts)
}

// ImportSession recreates a session and its log in st as Import does with
// what it reads, for an import from another form. The session takes the ID
// and the tenant opts asks for. Its times and its entries' are kept to the
// microsecond in UTC, as every backend keeps them, after the checks of
// Store.ImportEntries. It changes s and entries in place. st's driver must
// implement Importer (unless opts.CheckOnly); an ID in use is ErrConflict.
func ImportSession(ctx context.Context, st *Store, s *Session, entries []Entry, opts ImportOptions) (*Session, error) {
	if !st.Supports(CanImport) && !opts.CheckOnly {
		return nil, notImporter(st)
	}
	switch {
	case opts.ID != "":
		if err := ValidateID(opts.ID); err != nil {
			return nil, err
		}
		s.ID = opts.ID
	case opts.NewID:
		s.ID = agentmem.NewID()
	}
	if opts.Tenant != "" {
		s.Tenant = opts.Tenant
	}
	// Keep the precision every backend keeps, so an import reads back the
	// same everywhere.
	s.CreatedAt, s.UpdatedAt, s.ExpiresAt = micro(s.CreatedAt), micro(s.UpdatedAt), micro(s.ExpiresAt)
	for i := range entries {
		entries[i].Time = micro(entries[i].Time)
	}
	if err := validateImport(s, entries); err != nil {
		return nil, err
	}
	if opts.CheckOnly {
		return s, nil
	}
	if err := st.ImportEntries(ctx, s, entries); err != nil {
		return nil, err
	}
	return s, nil
}

func notImporter(st *Store) error {
	return fmt.Errorf("store: import: %T does not implement store.Importer, which exact import needs: %w", st.d, errors.ErrUnsupported)
}

// readExport parses an export into a session and its entries.
func readExport(ctx context.Context, r io.Reader, opts ImportOptions) (*Session, []Entry, error) {
	maxLine := opts.MaxLineBytes
	if maxLine <= 0 {
		maxLine = 64 << 20
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		s       *Session
		entries []Entry
		lines   int
		read    int64
	)
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		line, err := readLine(br, maxLine)
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			if errors.Is(err, errLineTooLong) {
				return nil, nil, invalid(fmt.Sprintf("line %d", lines+1), "is longer than %d bytes", maxLine)
			}
			return nil, nil, fmt.Errorf("store: import: line %d: %w", lines+1, err)
		}
		lines++
		read += int64(len(line))
		if opts.Progress != nil {
			opts.Progress(lines, read)
		}
		text := bytes.TrimRight(line, "\r\n")
		if lines == 1 {
			if s, err = decodeHeader(text); err != nil {
				return nil, nil, fmt.Errorf("line 1: %w", err)
			}
		} else {
			if len(bytes.TrimSpace(text)) == 0 {
				return nil, nil, invalid(fmt.Sprintf("line %d", lines), "is empty")
			}
			e, err := DecodeEntry(text)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: %w", lines, err)
			}
			entries = append(entries, e)
		}
		if err == io.EOF {
			break
		}
	}
	if s == nil {
		return nil, nil, invalid("line 1", "the input is empty: no export header")
	}
	return s, entries, nil
}

// micro returns t in UTC truncated to the microsecond; zero stays zero.
func micro(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line, newline included, of at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, err
	}
}

// decodeStrict decodes one JSON object into v, refusing what is not
// valid UTF-8, repeated keys, members v does not have and trailing data
// (jsoncheck.DecodeObject).
func decodeStrict(data []byte, v any) error { return jsoncheck.DecodeObject(data, v) }

func decodeHeader(b []byte) (*Session, error) {
	var h exportHeader
	if err := decodeStrict(b, &h); err != nil {
		return nil, invalid("header", "%v (want {\"agentmem_export\":%d,\"session\":{...}})", err, ExportVersion)
	}
	if h.Version == nil || h.Session == nil {
		return nil, invalid("header", "is not an agentmem export header (want {\"agentmem_export\":%d,\"session\":{...}})", ExportVersion)
	}
	if *h.Version != ExportVersion {
		return nil, invalid("header.agentmem_export", "unsupported export version %d (this build reads %d)", *h.Version, ExportVersion)
	}
	return h.Session, nil
}

// DecodeEntry decodes a line of EncodeEntry's: a JSON object with no
// field it does not know, valid UTF-8, whose step (DecodeStep) or
// compaction record (DecodeCompaction) decodes. Errors wrap
// agentmem.ErrInvalid. It checks the entry alone: Import checks the
// whole log.
func DecodeEntry(b []byte) (Entry, error) {
	var l exportLine
	if err := decodeStrict(b, &l); err != nil {
		return Entry{}, invalid("entry", "%v", err)
	}
	e := Entry{Seq: l.Seq, Kind: l.Kind, Time: l.Time}
	switch l.Kind {
	case StepEntry:
		if l.Compaction != nil || l.Step == nil {
			return Entry{}, invalid("entry", "a step entry needs a step and no compaction")
		}
		s, err := DecodeStep(l.Step)
		if err != nil {
			return Entry{}, fmt.Errorf("step: %w", err)
		}
		e.Step = s
	case CompactionEntry:
		if l.Step != nil || l.Compaction == nil {
			return Entry{}, invalid("entry", "a compaction entry needs a compaction and no step")
		}
		c, err := DecodeCompaction(l.Compaction)
		if err != nil {
			return Entry{}, err
		}
		e.Compaction = c
	default:
		return Entry{}, invalid("entry.kind", "unknown entry kind %q", l.Kind)
	}
	return e, nil
}
