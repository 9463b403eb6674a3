package proxy

import (
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// What the proxy holds of one reply to record it is bounded.
// Config.MaxReplyBytes (the reply's budget) bounds the text and tool call
// arguments it keeps. structureBytes bounds the rest of what gives a reply
// its shape: tool calls' IDs and names, the members of a whole answer. A
// reply larger than that reaches the client whole and is recorded cut
// short, marked truncated (MetaReplyTruncated).

const (
	// structureBytes bounds what the proxy holds of a reply besides its
	// budget. That is keys, numbers, punctuation, IDs, names, and the short
	// strings that are kept when the budget is spent.
	structureBytes = 64 << 10
	// shortString is how much of a string the proxy keeps when the
	// budget is spent (taken from structureBytes): an ID, a name, a
	// type. A string longer than it is cut there.
	shortString = 256
	// memberReserve is the structure a member or element must find left to
	// be kept: its key and short strings. With less, it is left out.
	memberReserve = 1 << 10
	// callCost is what a streamed tool call or content block costs the
	// structure besides its ID and name.
	callCost = 64
	// maxDepth bounds the nesting of a whole answer the proxy keeps; a
	// deeper value is recorded as null.
	maxDepth = 64
	// maxToken bounds a number or literal; a longer one is recorded as 0.
	maxToken = 64
	// minEventBytes is the least an event of a stream may hold (and be
	// followed) whatever the budget: the provider's own events.
	minEventBytes = 64 << 10
)

// budget is what the proxy may still hold of one reply.
type budget struct {
	// max is the text's budget, text and structure what is left.
	max, text, structure int
	// cut reports that something was cut short or left out.
	cut bool
}

func newBudget(text int64) *budget {
	n := int(min(text, 1<<40))
	return &budget{max: n, text: n, structure: structureBytes}
}

// add appends as much of s to b as the budget lets it hold, cut at a
// character boundary, and returns the result.
func (bu *budget) add(b []byte, s string) []byte {
	n := min(len(s), max(bu.text, 0))
	if n < len(s) {
		bu.cut = true
		n = cutPoint(s, n)
	}
	bu.text -= n
	return append(b, s[:n]...)
}

// miss says that part of the reply was missed: an event cut short, or not
// read. What follows is not held, so that what is held stays a prefix of
// the reply, IDs and names aside.
func (bu *budget) miss() {
	bu.cut, bu.text = true, 0
}

// short takes a short string (an ID, a name) with callCost from the
// structure, and reports whether it may be held. If not, what it belongs
// to is left out.
func (bu *budget) short(ss ...string) bool {
	n := callCost
	for _, s := range ss {
		if len(s) > shortString {
			bu.cut = true
			return false
		}
		n += len(s)
	}
	if bu.structure < n {
		bu.cut = true
		return false
	}
	bu.structure -= n
	return true
}

// held is what the budget let be held.
func (bu *budget) held() int {
	return bu.max - bu.text + structureBytes - bu.structure
}

// cutPoint returns the largest i <= n at which s may be cut without
// splitting a character.
func cutPoint(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}

// cutString returns s cut to at most n bytes at a character boundary.
func cutString(s string, n int) string { return s[:cutPoint(s, max(n, 0))] }

// reducer reads a whole answer's JSON as it arrives and writes a smaller
// document of the same shape within a budget. Once the budget is spent, a
// string is cut short (at a character and escape boundary, closed),
// keeping at most shortString bytes. A member or element that finds too
// little structure left is left out. A value nested deeper than maxDepth
// is null. What it writes is valid JSON when what it read was, whatever
// the size of what it read. What it holds is bounded by the budget.
type reducer struct {
	bu  *budget
	out []byte

	stack []frame
	state rstate
	// elem: the value expected is an array's element.
	elem bool
	// skip is the depth at which a value being left out began; -1 when
	// none is.
	skip int
	// failed: what was read is not JSON; done: its value ended.
	failed, done bool

	key     []byte // the key being read
	keyLong bool
	keyEsc  bool
	tok     []byte // the number or literal being read
	tokLong bool

	// The string being read: bytes kept, and whether it is cut (the rest is
	// skipped). Then the escape or UTF-8 sequence being read, and a high
	// surrogate escape held until the next unit says whether it pairs.
	strN   int
	strCut bool
	esc    []byte
	seq    []byte
	need   int
	high   []byte
}

// frame is an open object or array.
type frame struct {
	obj bool
	n   int // members or elements written
}

type rstate uint8

const (
	rValue    rstate = iota // a value
	rArrStart               // after '[': a value or ']'
	rObjStart               // after '{': a key or '}'
	rKey                    // after ',' in an object: a key
	rKeyStr                 // in a key
	rColon                  // after a key
	rStr                    // in a string value
	rTok                    // in a number or literal
	rAfter                  // after a value: ',' or a closing bracket
	rEnd                    // after the document's value
)

func newReducer(bu *budget) *reducer {
	return &reducer{bu: bu, skip: -1, esc: make([]byte, 0, 12), seq: make([]byte, 0, 4), high: make([]byte, 0, 6)}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// emitting reports whether what is read is written.
func (r *reducer) emitting() bool { return r.skip < 0 }

// put writes structure.
func (r *reducer) put(b ...byte) {
	if r.emitting() {
		r.out = append(r.out, b...)
		r.bu.structure -= len(b)
	}
}

// Write reads more of the answer.
func (r *reducer) Write(p []byte) {
	for i := 0; i < len(p) && !r.failed; {
		if r.state == rStr && len(r.esc) == 0 && r.need == 0 && len(r.high) == 0 {
			// A run of a string's plain characters, taken at once; an
			// incomplete character at the end of p is left to byte.
			j := i
			for j < len(p) && p[j] != '"' && p[j] != '\\' && p[j] >= 0x20 {
				j++
			}
			if j == len(p) {
				for k := j - 1; k >= i && k > j-utf8.UTFMax; k-- {
					if utf8.RuneStart(p[k]) {
						if !utf8.FullRune(p[k:j]) {
							j = k
						}
						break
					}
				}
			}
			if j > i {
				r.run(p[i:j])
				i = j
				continue
			}
		}
		r.byte(p[i])
		i++
	}
}

// run takes a run of whole characters of a string value as emit takes
// them one by one.
func (r *reducer) run(b []byte) {
	if !r.emitting() || r.strCut {
		return
	}
	t := min(len(b), max(r.bu.text, 0))
	n := t
	if n < len(b) {
		n += max(0, min(len(b)-t, shortString-(r.strN+t), r.bu.structure))
	}
	if n < len(b) {
		r.strCut, r.bu.cut = true, true
		for k := 1; k < utf8.UTFMax && n > 0 && !utf8.RuneStart(b[n]); k++ {
			n--
		}
	}
	tc := min(n, t)
	r.bu.text -= tc
	r.bu.structure -= n - tc
	r.out = append(r.out, b[:n]...)
	r.strN += n
}

func (r *reducer) byte(c byte) {
	if r.failed {
		return
	}
	switch r.state {
	case rValue, rArrStart:
		if isSpace(c) {
			return
		}
		if r.state == rArrStart {
			if c == ']' {
				r.close(false)
				return
			}
			r.elem = true
		}
		r.begin(c)
	case rObjStart, rKey:
		switch {
		case isSpace(c):
		case c == '}' && r.state == rObjStart:
			r.close(true)
		case c == '"':
			r.key, r.keyLong, r.keyEsc, r.state = r.key[:0], false, false, rKeyStr
		default:
			r.failed = true
		}
	case rKeyStr:
		switch {
		case r.keyEsc:
			r.keyEsc = false
		case c == '\\':
			r.keyEsc = true
		case c == '"':
			r.state = rColon
			return
		case c < 0x20:
			r.failed = true
			return
		}
		if len(r.key) < shortString {
			r.key = append(r.key, c)
		} else {
			r.keyLong = true
		}
	case rColon:
		switch {
		case isSpace(c):
		case c == ':':
			r.member()
			r.state, r.elem = rValue, false
		default:
			r.failed = true
		}
	case rStr:
		r.strByte(c)
	case rTok:
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E' {
			if len(r.tok) < maxToken {
				r.tok = append(r.tok, c)
			} else {
				r.tokLong = true
			}
			return
		}
		r.endToken()
		r.byte(c)
	case rAfter:
		top := &r.stack[len(r.stack)-1]
		switch {
		case isSpace(c):
		case c == ',':
			if top.obj {
				r.state = rKey
			} else {
				r.state, r.elem = rValue, true
			}
		case c == '}' && top.obj, c == ']' && !top.obj:
			r.close(top.obj)
		default:
			r.failed = true
		}
	case rEnd:
		if !isSpace(c) {
			r.failed = true
		}
	}
}

// member decides on an object's member whose key was read. The member is
// written, or left out (its value skipped) when the key is too long or too
// little structure is left.
func (r *reducer) member() {
	if !r.emitting() {
		return
	}
	if r.keyLong || r.bu.structure < memberReserve {
		r.bu.cut = true
		r.skip = len(r.stack)
		return
	}
	top := &r.stack[len(r.stack)-1]
	if top.n > 0 {
		r.put(',')
	}
	top.n++
	r.put('"')
	r.put(r.key...)
	r.put('"', ':')
}

// begin starts a value at c.
func (r *reducer) begin(c byte) {
	if r.elem && r.emitting() {
		if r.bu.structure < memberReserve {
			r.bu.cut = true
			r.skip = len(r.stack)
		} else {
			top := &r.stack[len(r.stack)-1]
			if top.n > 0 {
				r.put(',')
			}
			top.n++
		}
	}
	r.elem = false
	switch {
	case c == '{' || c == '[':
		if r.emitting() && len(r.stack) >= maxDepth {
			r.put('n', 'u', 'l', 'l')
			r.bu.cut = true
			r.skip = len(r.stack)
		}
		r.put(c)
		r.stack = append(r.stack, frame{obj: c == '{'})
		if c == '{' {
			r.state = rObjStart
		} else {
			r.state = rArrStart
		}
	case c == '"':
		r.put('"')
		r.strN, r.strCut, r.need = 0, false, 0
		r.esc, r.seq, r.high = r.esc[:0], r.seq[:0], r.high[:0]
		r.state = rStr
	case c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n':
		r.tok, r.tokLong = append(r.tok[:0], c), false
		r.state = rTok
	default:
		r.failed = true
	}
}

// close ends the open object or array.
func (r *reducer) close(obj bool) {
	if obj {
		r.put('}')
	} else {
		r.put(']')
	}
	r.stack = r.stack[:len(r.stack)-1]
	r.ended()
}

// ended follows a value that ended.
func (r *reducer) ended() {
	if r.skip == len(r.stack) {
		r.skip = -1
	}
	if len(r.stack) == 0 {
		r.state, r.done = rEnd, true
		return
	}
	r.state = rAfter
}

func (r *reducer) endToken() {
	if r.tokLong {
		r.bu.cut = true
		r.put('0')
	} else {
		r.put(r.tok...)
	}
	r.ended()
}

// strByte reads a byte of a string value, unit by unit. A unit is a
// character (its UTF-8 sequence, or an invalid byte alone) or an escape; a
// surrogate pair of escapes is one unit.
func (r *reducer) strByte(c byte) {
	if len(r.esc) > 0 {
		r.esc = append(r.esc, c)
		if len(r.esc) == 2 && c != 'u' || len(r.esc) == 6 {
			r.escape()
		}
		return
	}
	if r.need > 0 {
		if c&0xC0 == 0x80 {
			r.seq = append(r.seq, c)
			if r.need--; r.need == 0 {
				r.unit(r.seq)
			}
			return
		}
		r.unit(r.seq) // an invalid sequence, cut short
		r.need = 0
	}
	switch {
	case c == '\\':
		r.esc = append(r.esc[:0], c)
	case c == '"':
		if len(r.high) > 0 {
			r.emit(r.high)
		}
		if r.emitting() {
			r.out = append(r.out, '"')
			r.bu.structure--
		}
		r.ended()
	case c < 0x20:
		r.failed = true
	case c < 0x80 || c&0xC0 == 0x80 || c >= 0xF8:
		r.unit([]byte{c})
	default:
		r.seq = append(r.seq[:0], c)
		switch {
		case c >= 0xF0:
			r.need = 3
		case c >= 0xE0:
			r.need = 2
		default:
			r.need = 1
		}
	}
}

// escape takes an escape just read, holding a high surrogate until the
// next unit.
func (r *reducer) escape() {
	e := r.esc
	r.esc = r.esc[:0]
	if len(e) == 6 {
		if len(r.high) > 0 && isSurrogate(e, 0xDC00) {
			r.emit(append(r.high, e...))
			r.high = r.high[:0]
			return
		}
		if isSurrogate(e, 0xD800) {
			if len(r.high) > 0 {
				r.emit(r.high)
			}
			r.high = append(r.high[:0], e...)
			return
		}
	}
	r.unit(e)
}

// unit takes a unit that is not a high surrogate.
func (r *reducer) unit(u []byte) {
	if len(r.high) > 0 {
		r.emit(r.high)
		r.high = r.high[:0]
	}
	r.emit(u)
}

// emit writes a unit of a string, if the budget lets it: the budget
// first, then, within a string's first shortString bytes, the
// structure. Once a unit does not fit, the rest of the string is
// skipped.
func (r *reducer) emit(u []byte) {
	if !r.emitting() || r.strCut {
		return
	}
	switch n := len(u); {
	case r.bu.text >= n:
		r.bu.text -= n
	case r.strN+n <= shortString && r.bu.structure >= n:
		r.bu.structure -= n
	default:
		r.strCut, r.bu.cut = true, true
		return
	}
	r.out = append(r.out, u...)
	r.strN += len(u)
}

// isSurrogate reports whether a \uXXXX escape is in the surrogate half
// that starts at base (0xD800 high, 0xDC00 low).
func isSurrogate(e []byte, base rune) bool {
	var v rune
	for _, c := range e[2:] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return false
		}
	}
	return v >= base && v < base+0x400
}

// Result returns the document written, or false when what was read was
// not one whole JSON value.
func (r *reducer) Result() ([]byte, bool) {
	if r.state == rTok && len(r.stack) == 0 {
		r.endToken()
	}
	if r.failed || !r.done {
		return nil, false
	}
	return r.out, true
}

// held is what the reducer holds.
func (r *reducer) held() int { return cap(r.out) }

// utf8Check checks that bytes read in pieces are UTF-8.
type utf8Check struct {
	carry   []byte // an incomplete sequence at the end of the last piece
	invalid bool
}

func (u *utf8Check) Write(p []byte) {
	if u.invalid || len(p) == 0 {
		return
	}
	if len(u.carry) > 0 {
		// Complete the carried sequence from p.
		need := utf8.UTFMax - len(u.carry)
		b := append(u.carry, p[:min(need, len(p))]...)
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(b) {
				u.carry = b
				return
			}
			u.invalid = true
			return
		}
		p = p[size-len(u.carry):]
		u.carry = u.carry[:0]
	}
	// An incomplete sequence at the end waits for the next piece.
	end := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				end = i
			}
			break
		}
	}
	if !utf8.Valid(p[:end]) {
		u.invalid = true
		return
	}
	u.carry = append(u.carry[:0], p[end:]...)
}

// Invalid reports whether what was written is not UTF-8 (an incomplete
// sequence at the end included).
func (u *utf8Check) Invalid() bool { return u.invalid || len(u.carry) > 0 }

// stepLimit is the most a recorded reply's step may be as JSON. It is the
// store's limit, less room for an ID and a time that differ from those
// measured.
const stepLimit = store.MaxStepBytes - 1<<10

// fitStep cuts a reply's text and tool call arguments until the step it
// makes is at most stepLimit bytes as JSON, and reports whether it cut.
// The store refuses a larger step, and a reply is worth recording cut
// short rather than not at all. The reply's metadata counts.
func fitStep(msg *agentmem.Message) (bool, error) {
	cut := false
	for range 8 {
		f, err := agentmem.FoldMessages(nil, []agentmem.Message{*msg}, agentmem.FoldOptions{KeepPending: true, NewID: agentmem.NewID, Now: time.Now})
		if err != nil {
			return cut, err
		}
		b, err := store.EncodeStep(f.Steps[0])
		if err != nil {
			return cut, err
		}
		if len(b) <= stepLimit {
			return cut, nil
		}
		// Encoding may take a byte of text to several (escapes): cut in
		// proportion, with a margin, and measure again.
		ratio := float64(stepLimit) / float64(len(b)) * 0.95
		cut = true
		content := make(agentmem.Content, len(msg.Content))
		for i, p := range msg.Content {
			if p.Type == agentmem.PartText {
				p.Text = cutString(p.Text, int(float64(len(p.Text))*ratio))
			}
			content[i] = p
		}
		msg.Content = content
		calls := make([]agentmem.ToolCall, len(msg.ToolCalls))
		for i, c := range msg.ToolCalls {
			c.Arguments = cutString(c.Arguments, int(float64(len(c.Arguments))*ratio))
			calls[i] = c
		}
		msg.ToolCalls = calls
	}
	return cut, nil
}
