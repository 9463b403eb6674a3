package render

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/agentmem/agentmem"
)

// AppendJSON appends to dst the JSON of Encode(format, msgs) as a
// json.Encoder with SetEscapeHTML(false) writes it, byte for byte, without
// the newline the Encoder adds. It writes the wire form straight from the
// messages, without Encode's wire structs and without reflection, which is
// several times cheaper: a server answering contexts encodes tens of
// kilobytes of them per request. An unknown name is an error wrapping
// agentmem.ErrInvalid, and dst is returned unchanged.
//
// As with the Encoder, '<', '>' and '&' are written as they are, except in
// the Anthropic format's content blocks: AnthropicBlock.MarshalJSON
// escapes them, as json.Marshal does, and the Encoder keeps what a
// Marshaler wrote.
func AppendJSON(dst []byte, format string, msgs []agentmem.Message) ([]byte, error) {
	switch format {
	case NameOpenAI, NameObservation:
		return appendOpenAIJSON(dst, msgs), nil
	case NameAnthropic:
		return appendAnthropicJSON(dst, msgs), nil
	}
	return dst, unknownFormat(format)
}

// appendOpenAIJSON appends the JSON of OpenAIRequest(msgs).
func appendOpenAIJSON(dst []byte, msgs []agentmem.Message) []byte {
	dst = append(dst, '[')
	first := true
	for _, m := range msgs {
		dst, first = appendOpenAIMessageJSON(dst, chatMessage(m), first)
	}
	return append(dst, ']')
}

// appendOpenAIMessageJSON appends the JSON of the messages appendOpenAI
// makes of m, each after a comma unless first is set and it is the first.
// It reports whether first is still set.
func appendOpenAIMessageJSON(dst []byte, m agentmem.Message, first bool) ([]byte, bool) {
	comma := func() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
	}
	calls, rest, blocks := len(m.ToolCalls), 0, false
	for i := range m.Content {
		p := &m.Content[i]
		switch p.Type {
		case agentmem.PartToolUse:
			blocks = true
			if p.ToolCall != nil {
				calls++
			}
		case agentmem.PartToolResult:
			blocks = true
			comma()
			dst = append(dst, `{"role":"tool","content":`...)
			if len(p.Images) > 0 {
				dst = appendOpenAIResultContent(dst, p.Text, p.Images)
			} else {
				dst = appendString(dst, p.Text, false)
			}
			if p.ToolCallID != "" {
				dst = append(dst, `,"tool_call_id":`...)
				dst = appendString(dst, p.ToolCallID, false)
			}
			dst = append(dst, '}')
		default:
			rest++
		}
	}
	if blocks && rest == 0 && calls == 0 {
		return dst, first // the message was only tool results
	}
	comma()
	dst = append(dst, `{"role":`...)
	dst = appendString(dst, string(m.Role), false)
	dst = append(dst, `,"content":`...)
	dst = appendOpenAIContent(dst, m.Content, m.Role == agentmem.RoleAssistant && calls > 0)
	if m.Name != "" && m.Role != agentmem.RoleTool {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, m.Name, false)
	}
	if calls > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		n := 0
		for i := range m.ToolCalls {
			dst = appendOpenAICall(dst, &m.ToolCalls[i], n > 0)
			n++
		}
		for i := range m.Content {
			if p := &m.Content[i]; p.Type == agentmem.PartToolUse && p.ToolCall != nil {
				dst = appendOpenAICall(dst, p.ToolCall, n > 0)
				n++
			}
		}
		dst = append(dst, ']')
	}
	if m.ToolCallID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = appendString(dst, m.ToolCallID, false)
	}
	return append(dst, '}'), first
}

// appendOpenAICall appends the JSON of openAICall(*tc), after a comma if
// comma is set.
func appendOpenAICall(dst []byte, tc *agentmem.ToolCall, comma bool) []byte {
	if comma {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, tc.ID, false)
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = appendString(dst, tc.Name, false)
	dst = append(dst, `,"arguments":`...)
	dst = appendString(dst, tc.Arguments, false)
	return append(dst, "}}"...)
}

// openAIShown reports whether openAIContent writes the part.
func openAIShown(p *agentmem.Part) bool {
	return (p.Type == agentmem.PartText && p.Text != "") || (p.Type == agentmem.PartImage && p.Image != nil)
}

// appendOpenAIContent appends the JSON of openAIContent(parts, nullable),
// the parts of other types being left out as it leaves them out.
func appendOpenAIContent(dst []byte, parts agentmem.Content, nullable bool) []byte {
	n, last := 0, -1
	for i := range parts {
		if openAIShown(&parts[i]) {
			n, last = n+1, i
		}
	}
	switch {
	case n == 0 && nullable:
		return append(dst, "null"...)
	case n == 0:
		return append(dst, `""`...)
	case n == 1 && parts[last].Type == agentmem.PartText:
		return appendString(dst, parts[last].Text, false)
	}
	dst = append(dst, '[')
	comma := false
	for i := range parts {
		p := &parts[i]
		if !openAIShown(p) {
			continue
		}
		if p.Type == agentmem.PartText {
			dst = appendOpenAIText(dst, p.Text, comma)
		} else {
			dst = appendOpenAIImage(dst, p.Image, comma)
		}
		comma = true
	}
	return append(dst, ']')
}

// appendOpenAIResultContent appends the content of the tool message of a
// result with images: openAIContent of its text and images, always a list
// since there is an image.
func appendOpenAIResultContent(dst []byte, text string, images []agentmem.Image) []byte {
	dst = append(dst, '[')
	comma := false
	if text != "" {
		dst = appendOpenAIText(dst, text, false)
		comma = true
	}
	for i := range images {
		dst = appendOpenAIImage(dst, &images[i], comma)
		comma = true
	}
	return append(dst, ']')
}

func appendOpenAIText(dst []byte, text string, comma bool) []byte {
	if comma {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"type":"text","text":`...)
	dst = appendString(dst, text, false)
	return append(dst, '}')
}

func appendOpenAIImage(dst []byte, img *agentmem.Image, comma bool) []byte {
	if comma {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"type":"image_url","image_url":{"url":`...)
	dst = appendString(dst, imageURL(*img), false)
	if img.Detail != "" {
		dst = append(dst, `,"detail":`...)
		dst = appendString(dst, img.Detail, false)
	}
	return append(dst, "}}"...)
}

// appendAnthropicJSON appends the JSON of AnthropicRequest(msgs). The
// blocks are written as AnthropicBlock.MarshalJSON writes them, with
// json.Marshal's HTML escaping.
func appendAnthropicJSON(dst []byte, msgs []agentmem.Message) []byte {
	prepared := anthropicPrepare(msgs)
	dst = append(dst, '{')
	// System is the system messages' non-empty texts joined by blank
	// lines. Escaping them one by one is escaping the joined text: it
	// works rune by rune, and a blank line ends any rune.
	system := false
	for _, m := range prepared {
		if m.Role != agentmem.RoleSystem {
			continue
		}
		for i := range m.Content {
			if p := &m.Content[i]; p.Type == agentmem.PartText && p.Text != "" {
				if system {
					dst = append(dst, `\n\n`...)
				} else {
					dst = append(dst, `"system":"`...)
					system = true
				}
				dst = appendEscaped(dst, p.Text, false)
			}
		}
	}
	if system {
		dst = append(dst, `",`...)
	}
	dst = append(dst, `"messages":[`...)
	comma := false
	for _, m := range prepared {
		if m.Role == agentmem.RoleSystem {
			continue
		}
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		dst = append(dst, `{"role":`...)
		dst = appendString(dst, string(m.Role), false)
		dst = append(dst, `,"content":[`...)
		blockComma := false
		for i := range m.Content {
			var ok bool
			if dst, ok = appendAnthropicBlock(dst, &m.Content[i], blockComma); ok {
				blockComma = true
			}
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, "]}"...)
}

// appendAnthropicBlock appends the JSON of anthropicBlock(*p), after a
// comma if comma is set, and reports whether it did: parts of no block are
// left out.
func appendAnthropicBlock(dst []byte, p *agentmem.Part, comma bool) ([]byte, bool) {
	switch p.Type {
	case agentmem.PartText:
	case agentmem.PartImage:
		if p.Image == nil {
			return dst, false
		}
	case agentmem.PartToolUse:
		if p.ToolCall == nil {
			return dst, false
		}
	case agentmem.PartToolResult:
	default:
		return dst, false
	}
	if comma {
		dst = append(dst, ',')
	}
	switch p.Type {
	case agentmem.PartText:
		dst = appendAnthropicText(dst, p.Text)
	case agentmem.PartImage:
		dst = appendAnthropicImage(dst, p.Image)
	case agentmem.PartToolUse:
		dst = append(dst, `{"type":"tool_use","id":`...)
		dst = appendString(dst, p.ToolCall.ID, true)
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, p.ToolCall.Name, true)
		dst = append(dst, `,"input":`...)
		dst = appendHTMLEscapedJSON(dst, toolInput(p.ToolCall.Arguments))
		dst = append(dst, '}')
	case agentmem.PartToolResult:
		dst = append(dst, `{"type":"tool_result","tool_use_id":`...)
		dst = appendString(dst, p.ToolCallID, true)
		if len(p.Images) > 0 {
			dst = append(dst, `,"content":[`...)
			if p.Text != "" {
				dst = appendAnthropicText(dst, p.Text)
			}
			for i := range p.Images {
				if i > 0 || p.Text != "" {
					dst = append(dst, ',')
				}
				dst = appendAnthropicImage(dst, &p.Images[i])
			}
			dst = append(dst, ']')
		} else if p.Text != "" {
			dst = append(dst, `,"content":`...)
			dst = appendString(dst, p.Text, true)
		}
		dst = append(dst, `,"is_error":`...)
		dst = strconv.AppendBool(dst, p.IsError)
		dst = append(dst, '}')
	}
	return dst, true
}

func appendAnthropicText(dst []byte, text string) []byte {
	dst = append(dst, `{"type":"text","text":`...)
	dst = appendString(dst, text, true)
	return append(dst, '}')
}

func appendAnthropicImage(dst []byte, img *agentmem.Image) []byte {
	src := imageSource(*img)
	dst = append(dst, `{"type":"image","source":{"type":`...)
	dst = appendString(dst, src.Type, true)
	for _, f := range [...]struct{ name, value string }{{`,"url":`, src.URL}, {`,"media_type":`, src.MediaType}, {`,"data":`, src.Data}} {
		if f.value != "" {
			dst = append(dst, f.name...)
			dst = appendString(dst, f.value, true)
		}
	}
	return append(dst, "}}"...)
}

// appendHTMLEscapedJSON appends compact JSON text as json.Marshal writes
// a json.RawMessage: with '<', '>', '&', U+2028 and U+2029 escaped.
func appendHTMLEscapedJSON(dst, src []byte) []byte {
	start := 0
	for i, c := range src {
		if c == '<' || c == '>' || c == '&' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		}
		if c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
			start = i + 3
		}
	}
	return append(dst, src[start:]...)
}

// appendString appends s as a JSON string as encoding/json writes it, with
// '<', '>' and '&' escaped if html is set.
func appendString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s, html)
	return append(dst, '"')
}

// appendEscaped appends the inside of s's JSON string as encoding/json
// writes it: invalid UTF-8 becomes U+FFFD, U+2028 and U+2029 are escaped
// for JavaScript, and with html so are '<', '>' and '&'.
func appendEscaped(dst []byte, s string, html bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		// Most of a context is text that needs no escaping: skip it eight
		// bytes at a time, up to the first byte that may.
		for i+8 <= len(s) {
			m := unsafeBytes(load64(s, i), html)
			if m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i == len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			i++
			if e := escapeASCII[b]; e == 0 || e == htmlOnly && !html {
				continue
			}
			dst = append(dst, s[start:i-1]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i-size]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i-size]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			continue
		}
		start = i
	}
	return append(dst, s[start:]...)
}

const hexDigits = "0123456789abcdef"

// Bytes repeated in each of a word's eight lanes.
const (
	lanes1    = 0x0101010101010101
	lanesHigh = 0x8080808080808080
)

// unsafeBytes returns a mask whose lowest set bit is the high bit of the
// first of the eight bytes in x (little-endian) that a JSON string may
// not hold as is: a control, '"', '\\', a byte of a multi-byte rune and,
// with html, '<', '>' or '&'. It is 0 when there is none. Bits above the
// lowest can be false alarms, since a lane's borrow spills into the next.
func unsafeBytes(x uint64, html bool) uint64 {
	m := (x-lanes1*' ')&^x | zeroLanes(x^lanes1*'"') | zeroLanes(x^lanes1*'\\') | x
	if html {
		m |= zeroLanes(x^lanes1*'<') | zeroLanes(x^lanes1*'>') | zeroLanes(x^lanes1*'&')
	}
	return m & lanesHigh
}

// zeroLanes sets the high bit of v's zero bytes, exactly up to the first.
func zeroLanes(v uint64) uint64 { return (v - lanes1) &^ v }

// load64 returns the eight bytes of s from i as a little-endian number.
func load64(s string, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
}

// escapeASCII marks the ASCII bytes a JSON string holds escaped: the
// controls, '"' and '\\' always, and '<', '>' and '&' (htmlOnly) with
// HTML escaping.
var escapeASCII = func() (t [utf8.RuneSelf]uint8) {
	for b := range utf8.RuneSelf {
		switch {
		case b < ' ' || b == '"' || b == '\\':
			t[b] = always
		case b == '<' || b == '>' || b == '&':
			t[b] = htmlOnly
		}
	}
	return t
}()

const (
	always = 1 + iota
	htmlOnly
)
