package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/responses"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// The items routes: a session as the list of Responses-API input items
// that the OpenAI Agents SDK's sessions store (get_items, add_items,
// pop_item, clear_session), converted to and from steps by package
// responses.

// decodeItems decodes and checks the body of POST /items.
func decodeItems(body []byte) ([]json.RawMessage, *Error) {
	var req api.ItemsRequest
	if e := decodeStrict(body, &req); e != nil {
		return nil, e
	}
	if len(req.Items) == 0 {
		return nil, errInvalid("items", "is empty: send at least one item")
	}
	if len(req.Items) > api.MaxStepsPerRequest {
		return nil, errInvalid("items", "has %d items; at most %d per request", len(req.Items), api.MaxStepsPerRequest)
	}
	if err := responses.Check(req.Items); err != nil {
		return nil, inputError(err)
	}
	return req.Items, nil
}

// appendItems serves POST /v1/sessions/{id}/items. The items become
// messages (responses.ToMessages) appended by
// sessions.Service.AppendMessages, as the messages route appends them,
// with the same response. Items that begin with an output are placed
// after the newest step of the working set, as the service's cache gives
// it (sessions.Service.History with Head and Tail). The append is then
// conditional on that step. Without If-Match it is tried again when
// another writer got in between (sessions.Service.Retry).
func (s *Server) appendItems(w http.ResponseWriter, r *http.Request) {
	id, key, expected, body, e := s.appendInput(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	items, e := decodeItems(body)
	if e != nil {
		writeError(w, e)
		return
	}
	tenant := Tenant(r)
	ctx := r.Context()
	// The key names the items as sent: the messages they become depend
	// on the working set (where an output is placed).
	fp := ""
	if key != "" {
		fp = itemsFingerprint(items)
	}
	// once reads what the items need, converts them and appends them,
	// conditionally on what it read.
	var resp *sessions.MessagesResponse
	var refused *Error
	op := "append" // or "read", for the failures of the store
	once := func(int) error {
		refused, op = nil, "append"
		opts := responses.Options{NewID: itemIDs(key)}
		cond := expected
		if responses.NeedsState(items) {
			// The newest step, from the service's cache of working sets
			// (brought up to date with the log), not from a read of the
			// whole working set.
			h, err := s.svc.History(ctx, sessions.HistoryRequest{Tenant: tenant, SessionID: id, Head: 0, Tail: 1})
			if err != nil {
				op = "read"
				return sessionErr(id, err)
			}
			if n := len(h.Steps); n > 0 {
				opts.Newest = h.Steps[n-1].Info().ID
			}
			opts.LastSeq = h.LastSeq
			if cond == nil {
				cond = &opts.LastSeq
			}
		}
		msgs, err := responses.ToMessages(items, opts)
		if err != nil {
			refused = apiError(err)
			return err
		}
		resp, err = s.svc.AppendMessages(ctx, sessions.MessagesRequest{
			SessionID: id, Tenant: tenant, Messages: msgs, IdempotencyKey: key, Fingerprint: fp, Now: s.now, ExpectedLastSeq: cond,
		})
		if e := messagesError(err, key, false); e != nil {
			e.Field, e.Message = itemField(e.Field), itemRefs(e.Message)
			refused = e
		}
		return err
	}
	var err error
	if expected != nil || !responses.NeedsState(items) {
		// The client's position, whose conflict is the answer, or items
		// that need nothing read here (AppendMessages retries what it
		// reads itself).
		err = once(1)
	} else {
		err = s.svc.Retry(ctx, tenant, id, "items", once)
	}
	switch {
	case refused != nil:
		writeError(w, refused)
	case err != nil:
		s.rewriteFailed(w, r, id, expected, op, err)
	default:
		w.Header().Set("ETag", etag(resp.LastSeq))
		writeJSON(w, http.StatusCreated, api.AppendResponse{Seqs: resp.Seqs, LastSeq: resp.LastSeq, CompactionSeq: resp.CompactionSeq, Updated: resp.Updated})
	}
}

// itemsFingerprint is the fingerprint of a POST /items request (kind
// "items", store.Fingerprint): each item's JSON without insignificant
// whitespace. decodeItems has checked the items.
func itemsFingerprint(items []json.RawMessage) string {
	parts := make([][]byte, len(items))
	for i, it := range items {
		var b bytes.Buffer
		if json.Compact(&b, it) != nil {
			parts[i] = it
			continue
		}
		parts[i] = b.Bytes()
	}
	return store.Fingerprint("items", parts...)
}

// itemIDs gives the IDs of the steps that items become: KEY/0, KEY/1,
// ... with an Idempotency-Key, as sessions.Service.AppendMessages derives them, so
// that a retry stores nothing twice; new IDs without.
func itemIDs(key string) func() string {
	if key == "" {
		return agentmem.NewID
	}
	n := 0
	return func() string {
		id := key + "/" + strconv.Itoa(n)
		n++
		return id
	}
}

// itemField renames the field of an error about a message that an item
// became ("messages[2].tool_call_id") after the item ("items[2].call_id").
// A function_call item is a message with one tool call, whose ID is the
// item's call_id ("messages[2].tool_calls[0].id").
func itemField(f string) string {
	rest, ok := strings.CutPrefix(f, "messages[")
	if !ok {
		return f
	}
	f = "items[" + rest
	for msg, item := range map[string]string{".tool_call_id": ".call_id", ".content": ".output", ".tool_calls[0].id": ".call_id"} {
		if strings.HasSuffix(f, "]"+msg) {
			return strings.TrimSuffix(f, msg) + item
		}
	}
	return f
}

// messageRef is a reference to a message of the request in an error's
// message ("messages[2]").
var messageRef = regexp.MustCompile(`\bmessages\[(\d+)\]`)

// itemRefs renames the references to messages in an error's message
// after the items they are ("a call of messages[0]": "items[0]"), each
// item being one message.
func itemRefs(msg string) string { return messageRef.ReplaceAllString(msg, "items[$1]") }

// workingSet reads the working set of a session of tenant.
func (s *Server) workingSet(ctx context.Context, tenant, id string) (*store.ReadResponse, error) {
	ws, err := s.svc.Read(ctx, store.ReadRequest{Tenant: tenant, SessionID: id, WorkingSet: true})
	if err != nil {
		return nil, sessionErr(id, err)
	}
	return ws, nil
}

// readItems serves GET /v1/sessions/{id}/items?limit=&page_size=&page_token=:
// a page of the working set's items, oldest first (with limit, of its
// newest limit items). A page holds at most page_size items and
// api.MaxItemsPageBytes of them; next_page_token reads on (itemsCursor).
func (s *Server) readItems(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		writeError(w, e)
		return
	}
	q := r.URL.Query()
	limit, e := intParam(q, "limit", 0, 1, int(^uint(0)>>1))
	if e != nil {
		writeError(w, e)
		return
	}
	size, e := intParam(q, "page_size", api.DefaultItemsPageSize, 1, api.MaxItemsPageSize)
	if e != nil {
		writeError(w, e)
		return
	}
	var cur *itemsCursor
	if token := q.Get("page_token"); token != "" {
		if limit > 0 {
			writeError(w, errInvalid("limit", "cannot be combined with page_token: the token goes on with the read its first page began, limit included"))
			return
		}
		if cur, e = parseItemsToken(token); e != nil {
			writeError(w, e)
			return
		}
	}
	tenant := Tenant(r)
	ws, err := s.workingSet(r.Context(), tenant, id)
	if err != nil {
		s.fail(w, r, "read", err)
		return
	}
	items := responses.Items(ws.Steps)
	if cur == nil {
		cur = &itemsCursor{seq: ws.Session.LastSeq, end: len(items)}
		if limit > 0 && len(items) > limit {
			cur.off = len(items) - limit
		}
	} else {
		same, err := s.onlyAppended(r.Context(), tenant, id, cur.seq, ws.Session.LastSeq)
		if err != nil {
			s.fail(w, r, "read", sessionErr(id, err))
			return
		}
		if !same || cur.end > len(items) {
			writeError(w, &Error{Status: http.StatusConflict, Code: api.CodeConflict, Field: "page_token",
				Message: fmt.Sprintf("the session's items changed since the first page was read (a pop, a clear, a compaction or an output for an earlier call, or more than %d entries appended): read them again from the first page, without page_token", api.MaxReadLimit)})
			return
		}
	}
	page := items[cur.off:min(cur.end, cur.off+size)]
	n, bytes := 0, 0
	for ; n < len(page); n++ {
		b := len(page[n]) + 1 // and its comma
		if n > 0 && bytes+b > api.MaxItemsPageBytes {
			break
		}
		bytes += b
	}
	out := api.ItemsResponse{Items: page[:n]}
	if cur.off += n; cur.off < cur.end {
		out.NextPageToken = cur.token()
	}
	w.Header().Set("ETag", etag(ws.Session.LastSeq))
	writeJSON(w, http.StatusOK, out)
}

// itemsCursor is where a read of a session's items goes on: the
// session's last sequence number when its first page was read, the index
// of the next item, and the end of the read (the number of items then).
// The items before the end are the same on a later page as long as only
// steps were appended since (onlyAppended): an append adds items after
// them and changes none of them.
type itemsCursor struct {
	seq      int64
	off, end int
}

// token returns the cursor as an opaque page token: URL-safe base64 of
// its three numbers as unsigned varints.
func (c *itemsCursor) token() string {
	b := binary.AppendUvarint(nil, uint64(c.seq))
	b = binary.AppendUvarint(b, uint64(c.off))
	b = binary.AppendUvarint(b, uint64(c.end))
	return base64.RawURLEncoding.EncodeToString(b)
}

// parseItemsToken decodes a page token made by itemsCursor.token.
func parseItemsToken(token string) (*itemsCursor, *Error) {
	bad := errInvalid("page_token", "is not a next_page_token of this route: pass the one the previous page returned, or leave page_token out to read from the first item")
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, bad
	}
	var v [3]uint64
	for i := range v {
		n := 0
		if v[i], n = binary.Uvarint(b); n <= 0 {
			return nil, bad
		}
		b = b[n:]
	}
	const maxInt = uint64(int(^uint(0) >> 1))
	if len(b) != 0 || v[0] > math.MaxInt64 || v[2] > maxInt || v[1] >= v[2] {
		return nil, bad
	}
	return &itemsCursor{seq: int64(v[0]), off: int(v[1]), end: int(v[2])}, nil
}

// onlyAppended reports whether the log of a session, whose last sequence
// number was since and is now last, has only step entries after since.
// A compaction entry may change the items an earlier page returned: a
// pop, a clear, a compaction and an output completing an earlier call
// write one. More than api.MaxReadLimit entries are not read: false.
func (s *Server) onlyAppended(ctx context.Context, tenant, id string, since, last int64) (bool, error) {
	switch {
	case last == since:
		return true, nil
	case last < since || last-since > api.MaxReadLimit:
		return false, nil
	}
	resp, err := s.svc.Read(ctx, store.ReadRequest{Tenant: tenant, SessionID: id, After: since, Limit: int(last - since)})
	if err != nil {
		return false, err
	}
	for _, en := range resp.Entries {
		if en.Kind != store.StepEntry {
			return false, nil
		}
	}
	return true, nil
}

// popItem serves POST /v1/sessions/{id}/items/pop: it removes the newest
// item (responses.Newest) from the working set, with sessions.Service.Pop, and
// returns it. A function_call_output popped leaves its call pending
// again.
func (s *Server) popItem(w http.ResponseWriter, r *http.Request) {
	id, expected, ok := s.popInput(w, r)
	if !ok {
		return
	}
	tenant := Tenant(r)
	var item json.RawMessage
	resp, err := s.svc.Pop(r.Context(), sessions.PopRequest{SessionID: id, Tenant: tenant, ExpectedLastSeq: expected,
		Target: func(steps []agentmem.Step) (int, string) {
			newest, i, callID, _ := responses.Newest(steps) // every step has an item
			item = newest
			return i, callID
		}})
	if err != nil {
		s.rewriteFailed(w, r, id, expected, "pop", err)
		return
	}
	w.Header().Set("ETag", etag(resp.LastSeq))
	writeJSON(w, http.StatusOK, api.PopItemResponse{Item: item})
}

// clearItems serves DELETE /v1/sessions/{id}/items: it empties the
// working set (sessions.Service.Clear), recorded as a compaction entry; the log
// keeps every step and the session stays usable.
func (s *Server) clearItems(w http.ResponseWriter, r *http.Request) {
	id, expected, ok := s.popInput(w, r)
	if !ok {
		return
	}
	tenant := Tenant(r)
	resp, err := s.svc.Clear(r.Context(), sessions.ClearRequest{SessionID: id, Tenant: tenant, ExpectedLastSeq: expected})
	if err != nil {
		s.rewriteFailed(w, r, id, expected, "clear", err)
		return
	}
	w.Header().Set("ETag", etag(resp.LastSeq))
	w.WriteHeader(http.StatusNoContent)
}
