package proxy

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/jsoncheck"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// The fast path of recognising a history. Most agents resend their whole
// history, byte for byte as they sent it last time, plus the reply and
// what is new. Decoding and comparing a long history on every call would
// cost what the history is long. Instead the proxy remembers, per session:
//
//   - the length and a hash of the messages member of the last request it
//     recorded, from its opening bracket to the end of its last message;
//   - a hash of Anthropic's system member;
//   - the reply it recorded after it;
//   - the session's last sequence number then.
//
// A request may go on from there if no other writer has touched its
// session since, so that its last sequence number is the same. Its
// messages member must begin with the same bytes, followed by a comma or
// the closing bracket. Such a request is scanned and decoded only from
// there. Its next message must be the reply (compared as the rules
// compare), and what follows is new. Hashing the known bytes (maphash) is
// all the known part costs. Anything else takes the general path
// (planHistory), which gives the same answer.

// maxMemoBytes bounds what the memos hold, all sessions together: some
// 200 bytes each and the replies they keep.
const maxMemoBytes = 32 << 20

// memoOverhead is what a memo costs besides its reply.
const memoOverhead = 200

// mark identifies the messages of a request. It holds the length and hash
// of its messages member from the opening bracket to the end of its last
// element, and the hash of its system member (Anthropic). A request
// without messages has none (size 0).
type mark struct {
	size   int
	sum    uint64
	system uint64
}

// memo is what the proxy remembers of a session's last recorded request.
type memo struct {
	api string
	// created is the session's creation time: a session deleted and
	// created again under its ID is another one.
	created time.Time
	mark    mark
	// seq is the session's last sequence number after the request (and
	// its reply) were recorded; reply is the reply, nil when none was.
	seq   int64
	reply *agentmem.Message
	// bytes is what the memo is accounted for.
	bytes int
}

// memos holds the memos of the sessions recently proxied.
type memos struct {
	seed  maphash.Seed
	mu    sync.Mutex
	m     map[store.Key]*memo
	bytes int
}

func newMemos() *memos { return &memos{seed: maphash.MakeSeed(), m: map[store.Key]*memo{}} }

func (ms *memos) get(k store.Key) *memo {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.m[k]
}

// put sets a session's memo (nil forgets it), evicting others beyond the
// bound.
func (ms *memos) put(k store.Key, m *memo) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.putLocked(k, m)
}

func (ms *memos) putLocked(k store.Key, m *memo) {
	if old := ms.m[k]; old != nil {
		ms.bytes -= old.bytes
		delete(ms.m, k)
	}
	if m == nil {
		return
	}
	m.bytes = memoOverhead + len(k.Tenant) + len(k.ID)
	if m.reply != nil {
		m.bytes += messageBytes(*m.reply)
	}
	if m.bytes > maxMemoBytes {
		return
	}
	for other, om := range ms.m {
		if ms.bytes+m.bytes <= maxMemoBytes {
			break
		}
		ms.bytes -= om.bytes
		delete(ms.m, other)
	}
	ms.m[k] = m
	ms.bytes += m.bytes
}

// messageBytes estimates what a message held in memory costs.
func messageBytes(m agentmem.Message) int {
	n := 64 + len(m.ToolCallID) + len(m.Name)
	for _, p := range m.Content {
		n += 48 + len(p.Text)
		if p.Image != nil {
			n += len(p.Image.URL) + len(p.Image.Data) + len(p.Image.MediaType) + len(p.Image.Detail)
		}
	}
	for _, c := range m.ToolCalls {
		n += 48 + len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	for k, v := range m.Metadata {
		n += 32 + len(k) + len(v)
	}
	return n
}

// markOf returns the mark of a checked body's members.
func (ms *memos) markOf(fields map[string]json.RawMessage, system bool) mark {
	prefix := messagesPrefix(fields["messages"])
	if len(prefix) <= 1 {
		return mark{}
	}
	mk := mark{size: len(prefix), sum: maphash.Bytes(ms.seed, prefix)}
	if system {
		mk.system = maphash.Bytes(ms.seed, fields["system"])
	}
	return mk
}

// match returns the memo of a session that a request may extend. The
// session (as of its creation) and its last sequence number must be the
// memo's. It returns nil otherwise.
func (ms *memos) match(key store.Key, api string, sess *store.Session) *memo {
	m := ms.get(key)
	if m == nil || m.mark.size == 0 || m.api != api || m.seq != sess.LastSeq || !m.created.Equal(sess.CreatedAt) {
		return nil
	}
	return m
}

// quickBody splits a body that extends a memo without checking or even
// scanning the memo's part again. The rest (the new messages, the other
// members) is checked as decodeBody checks a body. It returns the body's
// members, the mark of its messages and the memo. It returns false when
// the body does not extend the memo, or does not check; the general path
// then decodes it and says what is wrong.
func (p *Proxy) quickBody(body []byte, d dialect, key store.Key, sess *store.Session) (*scanned, mark, *memo, bool) {
	m := p.memos.match(key, d.name(), sess)
	if m == nil {
		return nil, mark{}, nil, false
	}
	var h maphash.Hash
	h.SetSeed(p.memos.seed)
	sc, ok := scanBody(body, func(msgs []byte) int {
		if len(msgs) < m.mark.size {
			return -1
		}
		_, _ = h.Write(msgs[:m.mark.size])
		if h.Sum64() != m.mark.sum {
			return -1
		}
		return m.mark.size
	})
	if !ok || len(sc.msgs) < m.mark.size {
		return nil, mark{}, nil, false
	}
	mk := mark{size: len(sc.msgs)}
	_, _ = h.Write(sc.msgs[m.mark.size:])
	mk.sum = h.Sum64()
	if d.systemMember() {
		if mk.system = maphash.Bytes(p.memos.seed, sc.fields["system"]); mk.system != m.mark.system {
			return nil, mark{}, nil, false
		}
	}
	for k, v := range sc.fields {
		if k != "messages" && jsoncheck.Check(v) != nil {
			return nil, mark{}, nil, false
		}
	}
	for _, r := range sc.tail {
		if jsoncheck.Check(r) != nil {
			return nil, mark{}, nil, false
		}
	}
	return sc, mk, m, true
}

// fastMessages decodes the new messages of a request that extends a memo
// (quickBody). Its next message must be the memo's reply, if one was
// recorded, and what follows is new. It returns false when the request
// does not go on so: the general path takes over.
func (p *Proxy) fastMessages(d dialect, m *memo, tail []json.RawMessage) ([]agentmem.Message, bool) {
	msgs, err := d.decodeMessages(tail)
	if err != nil {
		return nil, false // the general path says what is wrong
	}
	if m.reply != nil {
		if len(msgs) == 0 || !sameMessage(msgs[0], *m.reply) {
			return nil, false
		}
		msgs = msgs[1:]
	}
	return msgs, true
}

// fastRecord records the new messages of a request that extends a memo
// (fastMessages), conditionally on the memo's sequence number. It first
// checks that the steps the session would pin fit; if not, it returns the
// error and writes nothing. It returns false when the append lost a race,
// having written nothing: the general path takes over.
func (p *Proxy) fastRecord(ctx context.Context, key store.Key, m *memo, msgs []agentmem.Message, fc *fitCheck) (*recorded, bool, error) {
	need, err := p.pinnedNeed(ctx, key.Tenant, key.ID, fc)
	if err != nil {
		return nil, false, err
	}
	hasTask := true
	if fc.needsTask(msgs) {
		h, err := p.svc.History(ctx, sessions.HistoryRequest{Tenant: key.Tenant, SessionID: key.ID, Head: historyHead, Tail: 0})
		if err != nil {
			return nil, false, err
		}
		if hasTask, err = p.hasTask(ctx, key.Tenant, key.ID, h.Steps[:h.Head], h.Omitted > 0); err != nil {
			return nil, false, err
		}
	}
	added, err := fc.addedNeed(msgs, hasTask)
	if err != nil {
		return nil, false, err
	}
	if err := fc.refuse(need + added); err != nil {
		return nil, false, err
	}
	rec := &recorded{rule: ruleContinuation, last: m.seq}
	if len(msgs) > 0 {
		seq := m.seq
		resp, err := p.svc.AppendMessages(ctx, sessions.MessagesRequest{Tenant: key.Tenant, SessionID: key.ID, Messages: msgs, ExpectedLastSeq: &seq})
		if err != nil {
			return nil, false, nil
		}
		rec.appended, rec.last = len(msgs), resp.LastSeq
	}
	p.fast.Add(1)
	return rec, true, nil
}

// remember sets the memo of a request just recorded, when the session then
// holds exactly the request's conversation. That is so after the rules
// new, continuation and rewind, not after overlap or new_only, which leave
// it holding more.
func (p *Proxy) remember(d dialect, key store.Key, created time.Time, rec *recorded, mk mark) {
	switch rec.rule {
	case ruleNew, ruleContinuation, ruleRewind:
		if mk.size > 0 {
			p.memos.put(key, &memo{api: d.name(), created: created, mark: mk, seq: rec.last})
			return
		}
	}
	p.memos.put(key, nil)
}

// replied updates a session's memo after its reply was appended: seq is
// the session's last sequence number before the append and after.
func (p *Proxy) replied(key store.Key, before, after int64, reply agentmem.Message) {
	p.memos.mu.Lock()
	defer p.memos.mu.Unlock()
	if m := p.memos.m[key]; m != nil && m.seq == before && m.reply == nil {
		n := *m
		n.seq, n.reply = after, &reply
		p.memos.putLocked(key, &n)
		return
	}
	p.memos.putLocked(key, nil)
}

// FastRecorded returns the number of requests recognised by the fast path
// since the proxy was made. Such a request resends, byte for byte, the
// last recorded request of its session and goes on from its reply.
func (p *Proxy) FastRecorded() int64 { return p.fast.Load() }
