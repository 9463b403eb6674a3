package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// v1Importer imports the sessions of a version 1 stream one by one.
type v1Importer struct {
	st   *store.Store // must implement store.Importer
	opts ImportOptions
}

// run imports every session of r, handing each result to report as soon
// as it is known. It stops at an error reading r, at a report error or
// when ctx is done; a session's bad content is a failed result, not an
// error.
func (im *v1Importer) run(ctx context.Context, r io.Reader, report func(Result) error) error {
	sp := newExportSplitter(r, im.opts.MaxLineBytes)
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
func (im *v1Importer) importChunk(ctx context.Context, c *exportChunk) (Result, error) {
	res := Result{Kind: KindSession, SourceID: c.id, Entries: c.entries, FirstLine: c.firstLine, LastLine: c.lastLine}
	fail := func(err error) (Result, error) {
		res.Status, res.Error = Failed, err.Error()
		return res, nil
	}
	if c.err != nil {
		return fail(c.err) // its line numbers are the input's already
	}
	if !im.opts.AllowShortLog && c.lastSeq > 0 && c.endSeq >= 0 && c.endSeq < c.lastSeq {
		end := "with no entry"
		if c.endSeq > 0 {
			end = fmt.Sprintf("at seq %d", c.endSeq)
		}
		return fail(fmt.Errorf("the log ends %s but the header's last_seq is %d: the input looks truncated (--allow-short-log imports it anyway)", end, c.lastSeq))
	}
	opts := store.ImportOptions{NewID: im.opts.NewIDs, Tenant: im.opts.Tenant, MaxLineBytes: im.opts.MaxLineBytes}
	s, err := store.Import(ctx, im.st, bytes.NewReader(c.data), opts)
	if errors.Is(err, agentmem.ErrConflict) && !im.opts.NewIDs {
		switch im.opts.OnConflict {
		case ConflictSkip:
			res.Status, res.Error = Skipped, "the ID is in use"
			return res, nil
		case ConflictNewID:
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
	res.Status, res.ID, res.Tenant = Imported, s.ID, s.Tenant
	return res, nil
}

// inputLines rewrites the line number that starts an error of
// store.Import ("line 3: ..." or "agentmem: invalid line 3: ...", counted
// from the session's header) as a line number of the whole input. It
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
	lineReader
	// ahead is a header line read ahead, which starts the next chunk.
	ahead     []byte
	aheadLine int
	eof       bool
}

func newExportSplitter(r io.Reader, maxLine int) *exportSplitter {
	return &exportSplitter{lineReader: newLineReader(r, maxLine)}
}

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
			continue
		case errors.Is(err, errLineTooLong):
			if c == nil {
				c = newChunk(sp.line)
			}
			if c.err == nil {
				c.err = fmt.Errorf("line %d: is longer than %d bytes (see --max-line-bytes)", sp.line, sp.max)
			}
			c.lastLine, c.entries = sp.line, c.entries+1
			continue
		case err != nil:
			return nil, err
		}
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

// readLine reads one line, newline included, of at most max bytes. A
// longer line is read to its end and dropped: errLineTooLong.
func (sp *exportSplitter) readLine() ([]byte, error) {
	line, err := sp.readRaw(sp.max)
	if err == errLineTooLong {
		if err := sp.skipLine(); err != nil {
			return nil, err
		}
	}
	return line, err
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
