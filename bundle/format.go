package bundle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/internal/jsoncheck"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
)

// Version is the version of the bundle format this package writes: the
// number of a bundle's header line, {"agentmem_export":2,...}. Version 1
// is a sequence of session exports (store.Export), which Import reads
// too.
const Version = 2

// VersionError is the error of an input of a format version newer than
// Version: it was written by a newer agentmem, and may hold what this one
// cannot restore. Nothing of it is imported. It wraps
// errors.ErrUnsupported.
type VersionError struct {
	// Version is the input's.
	Version int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("bundle: the input is an agentmem export of version %d, newer than this build reads (versions 1 to %d): import it with a newer agentmem; nothing was imported", e.Version, Version)
}

// Unwrap returns errors.ErrUnsupported.
func (e *VersionError) Unwrap() error { return errors.ErrUnsupported }

// DefaultMaxLineBytes bounds one line of a bundle unless
// ImportOptions.MaxLineBytes says otherwise. It holds the largest record
// of each kind: a step is at most 4 MiB as JSON, and a block's change
// holds two values of at most 100,000 characters. A document holds at
// most 256 KiB of text, and a vector.
const DefaultMaxLineBytes = 64 << 20

// Info is what a bundle's header line says of the bundle, for a reader:
// when it was written and what was selected. Import does not use it.
type Info struct {
	ExportedAt time.Time `json:"exported_at"`
	// Tenant is the one tenant selected; empty with AllTenants, or for
	// the default tenant.
	Tenant     string `json:"tenant,omitempty"`
	AllTenants bool   `json:"all_tenants,omitempty"`
	// All, UserID and Agent are the selection: everything, a user's, an
	// agent's sessions; none of them for sessions named one by one.
	All    bool   `json:"all,omitempty"`
	UserID string `json:"user_id,omitempty"`
	Agent  string `json:"agent,omitempty"`
}

// Counts are how many records of each kind a bundle holds, as its end
// line says.
type Counts struct {
	Sessions  int `json:"sessions"`
	Entries   int `json:"entries"`
	Blocks    int `json:"blocks"`
	Changes   int `json:"changes"`
	Users     int `json:"users"`
	Facts     int `json:"facts"`
	Audit     int `json:"audit"`
	Documents int `json:"documents"`
}

// The wire form of each record. They are the format's own types, not the
// stores', so that the format changes only when this package says so.
// An audit entry's states are the exception: facts.FactState's JSON form
// is what the SQL stores keep, so it cannot change either.
type (
	header struct {
		Version int   `json:"agentmem_export"`
		Bundle  *Info `json:"bundle"`
	}

	// line is any line after the header: exactly one of its fields is
	// set.
	line struct {
		Session  json.RawMessage `json:"session,omitempty"`
		Entry    json.RawMessage `json:"entry,omitempty"`
		Block    *wireBlock      `json:"block,omitempty"`
		Change   *wireChange     `json:"change,omitempty"`
		Facts    *wireUser       `json:"facts,omitempty"`
		Fact     *wireFact       `json:"fact,omitempty"`
		Audit    *wireAudit      `json:"audit,omitempty"`
		Document *wireDoc        `json:"document,omitempty"`
		End      *Counts         `json:"end,omitempty"`
	}

	wireBlock struct {
		Tenant      string           `json:"tenant,omitempty"`
		Owner       blocks.OwnerKind `json:"owner"`
		OwnerID     string           `json:"owner_id"`
		Label       string           `json:"label"`
		Value       string           `json:"value"`
		Limit       int              `json:"limit"`
		Description string           `json:"description,omitempty"`
		ReadOnly    bool             `json:"read_only,omitempty"`
		Version     int64            `json:"version"`
		CreatedAt   time.Time        `json:"created_at"`
		UpdatedAt   time.Time        `json:"updated_at"`
		UpdatedBy   string           `json:"updated_by,omitempty"`
	}

	wireChange struct {
		Version int64         `json:"version"`
		Action  blocks.Action `json:"action"`
		By      string        `json:"by,omitempty"`
		At      time.Time     `json:"at"`
		Before  string        `json:"before"`
		After   string        `json:"after"`
	}

	wireUser struct {
		Tenant string `json:"tenant,omitempty"`
		UserID string `json:"user_id"`
	}

	wireSource struct {
		SessionID string `json:"session_id,omitempty"`
		StepSeq   int64  `json:"step_seq,omitempty"`
		Agent     string `json:"agent,omitempty"`
	}

	wireFact struct {
		ID             string            `json:"id"`
		Text           string            `json:"text"`
		Confidence     float64           `json:"confidence"`
		CreatedAt      time.Time         `json:"created_at"`
		ReinforcedAt   time.Time         `json:"reinforced_at"`
		Reinforcements int               `json:"reinforcements,omitempty"`
		Source         wireSource        `json:"source,omitzero"`
		SupersededBy   string            `json:"superseded_by,omitempty"`
		SupersededAt   time.Time         `json:"superseded_at,omitzero"`
		ValidFrom      time.Time         `json:"valid_from"`
		ValidTo        time.Time         `json:"valid_to,omitzero"`
		Metadata       map[string]string `json:"metadata,omitempty"`
		Embedding      []float32         `json:"embedding,omitempty"`
	}

	wireAudit struct {
		FactID    string           `json:"fact_id,omitempty"`
		Action    facts.Action     `json:"action"`
		By        string           `json:"by,omitempty"`
		Reason    string           `json:"reason,omitempty"`
		Successor string           `json:"successor,omitempty"`
		Digest    string           `json:"digest,omitempty"`
		At        time.Time        `json:"at"`
		Before    *facts.FactState `json:"before,omitempty"`
		After     *facts.FactState `json:"after,omitempty"`
		SessionID string           `json:"session_id,omitempty"`
		StepSeq   int64            `json:"step_seq,omitempty"`
	}

	wireDoc struct {
		ID             string            `json:"id"`
		Tenant         string            `json:"tenant,omitempty"`
		Text           string            `json:"text"`
		Metadata       map[string]string `json:"metadata,omitempty"`
		Time           time.Time         `json:"time,omitzero"`
		Group          string            `json:"group,omitempty"`
		Seq            int64             `json:"seq,omitempty"`
		Embedding      []float32         `json:"embedding,omitempty"`
		EmbeddingModel string            `json:"embedding_model,omitempty"`
	}
)

// utc returns t in UTC; zero stays zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// micro returns t in UTC truncated to the microsecond, as every store
// keeps times; zero stays zero.
func micro(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

func toWireBlock(b blocks.Block) *wireBlock {
	return &wireBlock{Tenant: b.Tenant, Owner: b.Owner.Kind, OwnerID: b.Owner.ID, Label: b.Label, Value: b.Value, Limit: b.Limit,
		Description: b.Description, ReadOnly: b.ReadOnly, Version: b.Version, CreatedAt: utc(b.CreatedAt), UpdatedAt: utc(b.UpdatedAt), UpdatedBy: b.UpdatedBy}
}

func (w *wireBlock) block() blocks.Block {
	return blocks.Block{Key: blocks.Key{Tenant: w.Tenant, Owner: blocks.Owner{Kind: w.Owner, ID: w.OwnerID}, Label: w.Label},
		Value: w.Value, Limit: w.Limit, Description: w.Description, ReadOnly: w.ReadOnly, Version: w.Version,
		CreatedAt: micro(w.CreatedAt), UpdatedAt: micro(w.UpdatedAt), UpdatedBy: w.UpdatedBy}
}

func toWireChange(c blocks.Change) *wireChange {
	return &wireChange{Version: c.Version, Action: c.Action, By: c.By, At: utc(c.At), Before: c.Before, After: c.After}
}

func (w *wireChange) change() blocks.Change {
	return blocks.Change{Version: w.Version, Action: w.Action, By: w.By, At: micro(w.At), Before: w.Before, After: w.After}
}

func toWireFact(f facts.Fact) *wireFact {
	return &wireFact{ID: f.ID, Text: f.Text, Confidence: f.Confidence, CreatedAt: utc(f.CreatedAt), ReinforcedAt: utc(f.ReinforcedAt),
		Reinforcements: f.Reinforcements, Source: wireSource(f.Source), SupersededBy: f.SupersededBy, SupersededAt: utc(f.SupersededAt),
		ValidFrom: utc(f.ValidFrom), ValidTo: utc(f.ValidTo), Metadata: f.Metadata, Embedding: f.Embedding}
}

func (w *wireFact) fact(tenant, user string) facts.Fact {
	return facts.Fact{ID: w.ID, Tenant: tenant, UserID: user, Text: w.Text, Confidence: w.Confidence, CreatedAt: micro(w.CreatedAt),
		ReinforcedAt: micro(w.ReinforcedAt), Reinforcements: w.Reinforcements, Source: facts.Source(w.Source), SupersededBy: w.SupersededBy,
		SupersededAt: micro(w.SupersededAt), ValidFrom: micro(w.ValidFrom), ValidTo: micro(w.ValidTo), Metadata: w.Metadata, Embedding: w.Embedding}
}

// stateTimes returns a copy of s with its times passed through norm (utc
// or micro); nil for nil.
func stateTimes(s *facts.FactState, norm func(time.Time) time.Time) *facts.FactState {
	if s == nil {
		return nil
	}
	c := *s
	c.ValidFrom, c.ValidTo = norm(s.ValidFrom), norm(s.ValidTo)
	return &c
}

func toWireAudit(e facts.AuditEntry) *wireAudit {
	return &wireAudit{FactID: e.FactID, Action: e.Action, By: e.By, Reason: e.Reason, Successor: e.Successor, Digest: e.Digest,
		At: utc(e.At), Before: stateTimes(e.Before, utc), After: stateTimes(e.After, utc), SessionID: e.SessionID, StepSeq: e.StepSeq}
}

func (w *wireAudit) entry(tenant, user string) facts.AuditEntry {
	return facts.AuditEntry{Tenant: tenant, UserID: user, FactID: w.FactID, Action: w.Action, By: w.By, Reason: w.Reason,
		Successor: w.Successor, Digest: w.Digest, At: micro(w.At), Before: stateTimes(w.Before, micro), After: stateTimes(w.After, micro),
		SessionID: w.SessionID, StepSeq: w.StepSeq}
}

func toWireDoc(d recall.Doc) *wireDoc {
	return &wireDoc{ID: d.ID, Tenant: d.Tenant, Text: d.Text, Metadata: d.Metadata, Time: utc(d.Time), Group: d.Group, Seq: d.Seq,
		Embedding: d.Embedding, EmbeddingModel: d.EmbeddingModel}
}

func (w *wireDoc) doc() recall.Doc {
	return recall.Doc{ID: w.ID, Tenant: w.Tenant, Text: w.Text, Metadata: w.Metadata, Time: micro(w.Time), Group: w.Group, Seq: w.Seq,
		Embedding: w.Embedding, EmbeddingModel: w.EmbeddingModel}
}

// writer writes the lines of a bundle and counts its records.
type writer struct {
	w      *bufio.Writer
	counts Counts
}

// record writes one line {"kind":payload}.
func (w *writer) record(kind string, payload []byte) error {
	w.w.WriteString(`{"`)
	w.w.WriteString(kind)
	w.w.WriteString(`":`)
	w.w.Write(payload)
	_, err := w.w.WriteString("}\n")
	return err
}

// value writes one line {"kind":v}.
func (w *writer) value(kind string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("bundle: %s: %w", kind, err)
	}
	return w.record(kind, b)
}

func (w *writer) header(info Info) error {
	info.ExportedAt = utc(info.ExportedAt)
	b, err := json.Marshal(header{Version: Version, Bundle: &info})
	if err != nil {
		return err
	}
	w.w.Write(b)
	return w.w.WriteByte('\n')
}

func (w *writer) session(s *store.Session) error {
	w.counts.Sessions++
	return w.value("session", s)
}

func (w *writer) entry(e store.Entry) error {
	b, err := store.EncodeEntry(e)
	if err != nil {
		return fmt.Errorf("bundle: session entry %d: %w", e.Seq, err)
	}
	w.counts.Entries++
	return w.record("entry", b)
}

func (w *writer) block(b blocks.Block, history []blocks.Change) error {
	w.counts.Blocks++
	if err := w.value("block", toWireBlock(b)); err != nil {
		return err
	}
	return writeEach(w, "change", &w.counts.Changes, history, toWireChange)
}

func (w *writer) facts(tenant, user string, fs []facts.Fact, audit []facts.AuditEntry) error {
	w.counts.Users++
	if err := w.value("facts", wireUser{Tenant: tenant, UserID: user}); err != nil {
		return err
	}
	if err := writeEach(w, "fact", &w.counts.Facts, fs, toWireFact); err != nil {
		return err
	}
	return writeEach(w, "audit", &w.counts.Audit, audit, toWireAudit)
}

// writeEach writes one line {"kind":wire(x)} for each x of xs, counting
// them in n.
func writeEach[T, W any](w *writer, kind string, n *int, xs []T, wire func(T) W) error {
	for _, x := range xs {
		*n++
		if err := w.value(kind, wire(x)); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) document(d recall.Doc) error {
	w.counts.Documents++
	return w.value("document", toWireDoc(d))
}

func (w *writer) end() error {
	if err := w.value("end", w.counts); err != nil {
		return err
	}
	return w.w.Flush()
}

// The kinds of records, as Result.Kind names them.
const (
	KindSession  = "session"
	KindBlock    = "block"
	KindFacts    = "facts"
	KindDocument = "document"
	kindEnd      = "end"
)

// record is one record of a bundle, as read: its first line and the
// lines that belong to it (a session's entries, a block's changes, a
// user's facts and audit entries).
type record struct {
	kind                string
	firstLine, lastLine int

	session *store.Session
	entries []store.Entry

	block   blocks.Block
	history []blocks.Change

	tenant, user string
	facts        []facts.Fact
	audit        []facts.AuditEntry

	doc recall.Doc

	end Counts
}

// lines is the number of lines of the record after its first.
func (r *record) lines() int { return r.lastLine - r.firstLine }

// decoder reads the records of a version 2 bundle after its header, line
// by line, checking the form of each line and the order of the lines. A
// session's entries come after it, a block's changes after it, a user's
// facts and then audit entries after the user's facts line, the end line
// last. It
// does not check what the records hold (check does). Its errors wrap
// agentmem.ErrInvalid and name the line, but for the reader's.
type decoder struct {
	lineReader
	// ahead is a line read ahead, which starts the next record.
	ahead     *line
	aheadLine int
	// counts are the records read so far; ended is set after the end
	// line.
	counts Counts
	ended  bool
}

func newDecoder(r io.Reader, maxLine int) *decoder {
	return &decoder{lineReader: newLineReader(r, maxLine)}
}

// invalidLine returns an error naming line n.
func invalidLine(n int, format string, args ...any) error {
	return &agentmem.InvalidError{Field: fmt.Sprintf("line %d", n), Reason: fmt.Sprintf(format, args...)}
}

// lineErr prefixes err with its line, keeping what it wraps.
func lineErr(n int, err error) error { return fmt.Errorf("line %d: %w", n, err) }

// recordErr prefixes an error of the check of a record with the line at
// fault. That is the line of the entry, change, fact or audit entry the
// error names by its index (entries[2], history[0], put[1], audit[3]),
// or else the record's first line.
func recordErr(r *record, err error) error {
	var ie *agentmem.InvalidError
	if errors.As(err, &ie) {
		for _, p := range []struct {
			prefix string
			first  int
		}{{"entries[", r.firstLine + 1}, {"history[", r.firstLine + 1}, {"put[", r.firstLine + 1}, {"audit[", r.firstLine + 1 + len(r.facts)}} {
			rest, ok := strings.CutPrefix(ie.Field, p.prefix)
			if !ok {
				rest, ok = strings.CutPrefix(err.Error(), p.prefix)
			}
			if !ok {
				continue
			}
			if i, err2 := strconv.Atoi(rest[:max(strings.IndexByte(rest, ']'), 0)]); err2 == nil && i >= 0 && p.first+i <= r.lastLine {
				return lineErr(p.first+i, err)
			}
		}
	}
	return lineErr(r.firstLine, err)
}

// readLine reads the next line, without its line ending; io.EOF after
// the last.
func (d *decoder) readLine() ([]byte, error) {
	buf, err := d.readRaw(d.max + 2) // room for "\r\n"
	if err == errLineTooLong {
		return nil, invalidLine(d.line+1, "is longer than %d bytes", d.max)
	}
	if err != nil {
		return nil, err
	}
	buf = bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))
	if len(buf) > d.max {
		return nil, invalidLine(d.line, "is longer than %d bytes", d.max)
	}
	return buf, nil
}

// decodeStrict decodes one JSON object into v, refusing what is not
// valid UTF-8, repeated keys, members v does not have and trailing data
// (jsoncheck.DecodeObject).
func decodeStrict(data []byte, v any) error { return jsoncheck.DecodeObject(data, v) }

// readHeader reads the header line of a version 2 bundle.
func (d *decoder) readHeader() (Info, error) {
	b, err := d.readLine()
	if err == io.EOF {
		return Info{}, invalidLine(1, "the input is empty: no header")
	}
	if err != nil {
		return Info{}, err
	}
	var h header
	if err := decodeStrict(b, &h); err != nil {
		return Info{}, invalidLine(1, "%v (want the header {\"agentmem_export\":%d,\"bundle\":{...}})", err, Version)
	}
	if h.Version != Version || h.Bundle == nil {
		return Info{}, invalidLine(1, "is not the header of a version %d bundle (want {\"agentmem_export\":%d,\"bundle\":{...}})", Version, Version)
	}
	return *h.Bundle, nil
}

// next reads the next line, or the one read ahead. It returns nil at the
// end of the input.
func (d *decoder) next() (*line, int, error) {
	if d.ahead != nil {
		l, n := d.ahead, d.aheadLine
		d.ahead = nil
		return l, n, nil
	}
	b, err := d.readLine()
	if err == io.EOF {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	n := d.line
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, 0, invalidLine(n, "is empty")
	}
	var l line
	if err := decodeStrict(b, &l); err != nil {
		return nil, 0, invalidLine(n, "%v", err)
	}
	if l.kinds() != 1 {
		return nil, 0, invalidLine(n, "holds %d records: a line is one object with one key, the record's kind ({\"session\":{...}}, {\"fact\":{...}}, ...)", l.kinds())
	}
	if d.ended {
		return nil, 0, invalidLine(n, "follows the end line")
	}
	return &l, n, nil
}

// kinds counts the record kinds the line holds.
func (l *line) kinds() int {
	n := 0
	for _, set := range []bool{isSet(l.Session), isSet(l.Entry), l.Block != nil, l.Change != nil, l.Facts != nil, l.Fact != nil, l.Audit != nil, l.Document != nil, l.End != nil} {
		if set {
			n++
		}
	}
	return n
}

// isSet reports whether a raw field was given a value other than null.
func isSet(m json.RawMessage) bool { return len(m) > 0 && string(m) != "null" }

// following reads the lines that belong to the current record while
// belongs says so, and calls add with each; the first line that does not
// belong is kept for the next record.
func (d *decoder) following(r *record, belongs func(*line) bool, add func(*line, int) error) error {
	for {
		l, n, err := d.next()
		if err != nil || l == nil {
			return err
		}
		if !belongs(l) {
			d.ahead, d.aheadLine = l, n
			return nil
		}
		if err := add(l, n); err != nil {
			return err
		}
		r.lastLine = n
	}
}

// nextRecord returns the next record, or nil after the end line. A
// bundle that ends without its end line is cut short: an error.
func (d *decoder) nextRecord() (*record, error) {
	l, n, err := d.next()
	if err != nil {
		return nil, err
	}
	if l == nil {
		if d.ended {
			return nil, nil
		}
		return nil, invalidLine(d.line+1, "the bundle ends without its end line: it is cut short")
	}
	r := &record{firstLine: n, lastLine: n}
	switch {
	case isSet(l.Session):
		r.kind = KindSession
		var s store.Session
		if err := decodeStrict(l.Session, &s); err != nil {
			return nil, invalidLine(n, "session: %v", err)
		}
		r.session = &s
		d.counts.Sessions++
		err = d.following(r, func(l *line) bool { return isSet(l.Entry) }, func(l *line, n int) error {
			e, err := store.DecodeEntry(l.Entry)
			if err != nil {
				return lineErr(n, err)
			}
			r.entries = append(r.entries, e)
			d.counts.Entries++
			return nil
		})
	case l.Block != nil:
		r.kind, r.block = KindBlock, l.Block.block()
		d.counts.Blocks++
		err = d.following(r, func(l *line) bool { return l.Change != nil }, func(l *line, n int) error {
			r.history = append(r.history, l.Change.change())
			d.counts.Changes++
			return nil
		})
	case l.Facts != nil:
		r.kind, r.tenant, r.user = KindFacts, l.Facts.Tenant, l.Facts.UserID
		d.counts.Users++
		err = d.following(r, func(l *line) bool { return l.Fact != nil || l.Audit != nil }, func(l *line, n int) error {
			if l.Fact != nil {
				if len(r.audit) > 0 {
					return invalidLine(n, "a fact after audit entries: a user's facts come before the user's audit entries")
				}
				r.facts = append(r.facts, l.Fact.fact(r.tenant, r.user))
				d.counts.Facts++
			} else {
				r.audit = append(r.audit, l.Audit.entry(r.tenant, r.user))
				d.counts.Audit++
			}
			return nil
		})
	case l.Document != nil:
		r.kind, r.doc = KindDocument, l.Document.doc()
		d.counts.Documents++
	case l.End != nil:
		r.kind, r.end = kindEnd, *l.End
		if *l.End != d.counts {
			return nil, invalidLine(n, "the end line counts %+v, but the bundle holds %+v: it was cut or changed", *l.End, d.counts)
		}
		d.ended = true
	default:
		what := "an audit entry"
		switch {
		case isSet(l.Entry):
			what = "a session's entry"
		case l.Change != nil:
			what = "a block's change"
		case l.Fact != nil:
			what = "a fact"
		}
		return nil, invalidLine(n, "%s out of place: it follows the line of what it belongs to (a session, a block, a user's facts)", what)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}
