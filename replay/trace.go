package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// DefaultMaxLineBytes is the longest trace line Run accepts when
// Config.MaxLineBytes is zero.
const DefaultMaxLineBytes = 64 << 20

// LineError reports a bad trace line. It wraps the reason, so errors.Is
// finds agentmem.ErrInvalid for messages the memory refused.
type LineError struct {
	// Line is the 1-based number of the bad line.
	Line int
	// Err is the reason.
	Err error
}

// Error implements error: "trace line N: REASON".
func (e *LineError) Error() string { return fmt.Sprintf("trace line %d: %v", e.Line, e.Err) }

// Unwrap returns the reason.
func (e *LineError) Unwrap() error { return e.Err }

// lineReader reads a trace line by line without a length limit other than
// max, reusing its buffer.
type lineReader struct {
	r    *bufio.Reader
	max  int
	line int // number of the line last returned
	buf  []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	return &lineReader{r: bufio.NewReaderSize(r, 1<<20), max: max}
}

// next returns the next line without its line ending. The slice is valid
// until the next call. It returns io.EOF after the last line; a final
// line without a newline is still a line, and a file ending in a newline
// has no empty last line.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if len(lr.buf)+len(chunk) > lr.max+1 { // +1: the newline
			lr.line++
			return nil, &LineError{Line: lr.line, Err: fmt.Errorf("line is longer than %d bytes", lr.max)}
		}
		switch {
		case err == nil:
			lr.line++
			if len(lr.buf) == 0 {
				return trimEOL(chunk), nil
			}
			lr.buf = append(lr.buf, chunk...)
			return trimEOL(lr.buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.buf = append(lr.buf, chunk...)
		case errors.Is(err, io.EOF):
			lr.buf = append(lr.buf, chunk...)
			if len(lr.buf) == 0 {
				return nil, io.EOF
			}
			lr.line++
			return trimEOL(lr.buf), nil
		default:
			return nil, fmt.Errorf("reading trace after line %d: %w", lr.line, err)
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// decodeLine decodes one trace line strictly into a message: valid UTF-8,
// one JSON object, only agentmem.Message's fields, nothing after it. The
// message's own invariants are checked by AddMessage.
func decodeLine(line []byte) (agentmem.Message, error) {
	if !utf8.Valid(line) {
		return agentmem.Message{}, fmt.Errorf("invalid UTF-8 at byte %d", invalidUTF8At(line))
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return agentmem.Message{}, errors.New("empty line (want one JSON message per line)")
	}
	if trimmed[0] != '{' {
		return agentmem.Message{}, errors.New("not a JSON object (want one JSON message per line)")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var m agentmem.Message
	if err := dec.Decode(&m); err != nil {
		return agentmem.Message{}, fmt.Errorf("invalid message JSON: %w", err)
	}
	if dec.InputOffset() != int64(len(trimmed)) {
		return agentmem.Message{}, fmt.Errorf("unexpected data after the JSON object at byte %d", dec.InputOffset())
	}
	return m, nil
}

// invalidUTF8At returns the offset of the first invalid UTF-8 sequence.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// sequence checks the order rules of a trace that AddMessage does not. The
// trace opens with the system prompt, and the task (a user message) comes
// before the first assistant message.
type sequence struct {
	n       int // messages seen
	sawUser bool
}

func (s *sequence) check(m agentmem.Message) error {
	s.n++
	if s.n == 1 && m.Role != agentmem.RoleSystem {
		return fmt.Errorf("the trace must open with the system prompt, not a %q message", m.Role)
	}
	switch m.Role {
	case agentmem.RoleUser:
		s.sawUser = true
	case agentmem.RoleAssistant, agentmem.RoleTool, agentmem.RoleAgentCall, agentmem.RoleAgentResponse:
		if !s.sawUser {
			return fmt.Errorf("a %q message before the task (the first user message)", m.Role)
		}
	}
	return nil
}
