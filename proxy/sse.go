package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
)

// maxEventBytes bounds one server-sent event the proxy reads.
const maxEventBytes = 16 << 20

// relayStream relays a streamed answer (server-sent events) to the client
// event by event, as it arrives, each flushed at once. With an
// accumulator it follows the answer, and records the reply before it
// relays the answer's last event (so that the client's next request finds
// it recorded); a stream the upstream cuts before its end, or whose
// client goes away, records nothing of the reply. It reports whether the
// stream was cut, and whether the reply was recorded.
func (p *Proxy) relayStream(w http.ResponseWriter, resp *http.Response, acc accumulator, c *call, tm *timing) (cut, recorded bool) {
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var ev bytes.Buffer
	last := false // the answer's last event was read
	send := func() bool {
		if ev.Len() == 0 {
			return true
		}
		if acc != nil && !last {
			name, data := parseEvent(ev.Bytes())
			if acc.event(name, data) {
				tm.end()
				if msg, ok := acc.reply(false); ok {
					recorded = p.recordReply(resp.Request.Context(), c, msg, true)
				}
				last = true
			}
		}
		_, err := w.Write(ev.Bytes())
		ev.Reset()
		if err == nil {
			err = rc.Flush()
		}
		return err == nil
	}
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if ev.Len()+len(line) > maxEventBytes {
				p.log.Warn("proxy: a streamed event is too large; the stream is cut", "limit", maxEventBytes)
				tm.end()
				return true, recorded
			}
			ev.Write(line)
			if isBlank(line) && !send() {
				tm.end()
				return true, recorded // the client went away
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			tm.end()
			if acc != nil && !last {
				// The stream ended without its last event: the reply is
				// recorded only if the accumulator holds all of it.
				name, data := parseEvent(ev.Bytes())
				acc.event(name, data)
				if msg, ok := acc.reply(true); ok {
					recorded = p.recordReply(resp.Request.Context(), c, msg, true)
				}
			}
			return !send(), recorded
		case err != nil:
			// The upstream cut the stream (or the client's cancellation
			// closed it): relay what came and record nothing more.
			tm.end()
			if ev.Len() > 0 {
				_, _ = w.Write(ev.Bytes())
				_ = rc.Flush()
			}
			return true, recorded
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
