package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"unicode/utf8"
)

// relayStream relays a streamed answer (server-sent events) to the client
// event by event, as it arrives, each flushed at once. With an accumulator
// it follows the answer. It records the reply before it relays the
// answer's last event, so that the client's next request finds it
// recorded. A stream the upstream cuts before its end, or whose client
// goes away, records nothing of the reply. An event is held until it ends,
// to be followed, up to the reply's budget (at least minEventBytes). A
// larger one is relayed as it comes, its data read by a reducer within the
// same bound, and followed cut short; the reply is then truncated. It sets
// st's Cut, Reply, ReplyTruncated and ReplyHeld.
func (p *Proxy) relayStream(w http.ResponseWriter, resp *http.Response, acc accumulator, c *call, st *Stats, tm *timing) {
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	limit := int(max(min(p.cfg.MaxReplyBytes, 1<<40), minEventBytes))
	var (
		ev      bytes.Buffer
		total   int64        // the bytes of the answer read
		last    bool         // the answer's last event was read
		invalid bool         // an event's data was not UTF-8
		large   *eventReader // reads an event too large to hold, relayed as it comes
		atStart = true
	)
	record := func(atEOF bool) {
		if msg, ok := acc.reply(atEOF); ok {
			st.Reply, st.ReplyTruncated = p.recordReply(resp.Request.Context(), c, msg,
				replyInfo{stream: true, truncated: acc.truncated(), bytes: total, invalidUTF8: invalid})
		}
	}
	follow := func() {
		name, data := parseEvent(ev.Bytes())
		if !utf8.Valid(data) {
			invalid = true
		}
		last = acc.event(name, data)
		st.ReplyHeld = max(st.ReplyHeld, ev.Cap()+acc.held())
	}
	// followLarge follows the event the eventReader read, cut short.
	followLarge := func() {
		data, ok := large.red.Result()
		if large.utf8.Invalid() {
			invalid = true
		}
		st.ReplyHeld = max(st.ReplyHeld, large.red.held()+acc.held())
		if !ok {
			acc.missed()
			return
		}
		last = acc.event(string(large.name), data)
		if large.red.bu.cut {
			acc.missed()
		}
		if last {
			record(false)
		}
	}
	write := func(b []byte) bool {
		_, err := w.Write(b)
		return err == nil
	}
	// send relays the event held, following it first.
	send := func() bool {
		if ev.Len() == 0 {
			return true
		}
		if acc != nil && !last {
			if follow(); last {
				tm.end()
				record(false)
			}
		}
		ok := write(ev.Bytes())
		ev.Reset()
		return ok && rc.Flush() == nil
	}
	for {
		line, err := br.ReadSlice('\n')
		total += int64(len(line))
		if len(line) > 0 {
			// A blank line, read whole, ends an event.
			end := atStart && err == nil && isBlank(line)
			atStart = err == nil
			switch {
			case large != nil || ev.Len()+len(line) > limit:
				if large == nil {
					large = newEventReader(limit)
					large.Write(ev.Bytes())
					if !write(ev.Bytes()) {
						tm.end()
						st.Cut = true
						return
					}
					ev.Reset()
				}
				large.Write(line)
				if !write(line) {
					tm.end()
					st.Cut = true
					return
				}
				if end {
					if acc != nil && !last {
						followLarge()
					}
					large = nil
					_ = rc.Flush()
				}
			default:
				ev.Write(line)
				if end && !send() {
					tm.end()
					st.Cut = true // the client went away
					return
				}
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			tm.end()
			if acc != nil && !last && large == nil {
				// The stream ended without its last event: the reply is
				// recorded only if the accumulator holds all of it.
				follow()
				record(true)
				last = true
			}
			st.Cut = !send()
			return
		case err != nil:
			// The upstream cut the stream (or the client's cancellation
			// closed it): relay what came and record nothing more.
			tm.end()
			if ev.Len() > 0 {
				_, _ = w.Write(ev.Bytes())
				_ = rc.Flush()
			}
			st.Cut = true
			return
		}
	}
}

// eventReader reads an event of a stream as it comes, without holding it.
// It reads its name, and its data through a reducer; the data of the
// events the proxy follows is JSON.
type eventReader struct {
	red   *reducer
	utf8  utf8Check
	name  []byte
	field []byte
	// value: the line's field has been read; space: a space may follow
	// its colon; data: the number of data lines.
	value, space bool
	data         int
}

func newEventReader(limit int) *eventReader {
	return &eventReader{red: newReducer(newBudget(int64(limit)))}
}

// Write reads more of the event, line by line.
func (e *eventReader) Write(p []byte) {
	for _, c := range p {
		switch {
		case c == '\n':
			e.value, e.field = false, e.field[:0]
			continue
		case c == '\r':
			continue
		case !e.value:
			if c == ':' {
				e.value, e.space = true, true
				if string(e.field) == "data" {
					if e.data++; e.data > 1 {
						e.red.Write([]byte{'\n'})
						e.utf8.Write([]byte{'\n'})
					}
				}
			} else if len(e.field) < 16 {
				e.field = append(e.field, c)
			}
			continue
		case e.space:
			e.space = false
			if c == ' ' {
				continue
			}
		}
		switch string(e.field) {
		case "data":
			e.red.byte(c)
			e.utf8.Write([]byte{c})
		case "event":
			if len(e.name) < 64 {
				e.name = append(e.name, c)
			}
		}
	}
}

// isBlank reports whether a line ends an event.
func isBlank(line []byte) bool {
	return len(bytes.TrimRight(line, "\r\n")) == 0
}

// parseEvent returns an event's name and data (its data lines joined by
// newlines).
func parseEvent(ev []byte) (name string, data []byte) {
	var d [][]byte
	for _, line := range bytes.Split(ev, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			d = append(d, value)
		}
	}
	return name, bytes.Join(d, []byte("\n"))
}
