package proxy

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/jsoncheck"
	"github.com/agentmem/agentmem/store"
)

// The fast path of recognising a history. Most agents resend their whole
// history, byte for byte as they sent it last time, plus the reply and
// what is new. Decoding and comparing a long history on every call would
// cost what the history is long; instead the proxy remembers, per
// session, a hash of each raw message of the last request it recorded
// (and of Anthropic's system member), the reply it recorded after it, and
// the session's last sequence number then. A request whose raw messages
// begin with the same bytes, on a session no other writer has touched
// since (its last sequence number is the same), is decoded only from
// there: its next message must be the reply (compared as the rules
// compare), and what follows is new. Anything else takes the general
// path (planHistory), which gives the same answer.

// maxMemoHashes bounds the hashes the memos hold, all sessions together
// (8 bytes each: 32 MiB).
const maxMemoHashes = 4 << 20

// memo is what the proxy remembers of a session's last recorded request.
type memo struct {
	api string
	// created is the session's creation time: a session deleted and
	// created again under its ID is another one.
	created time.Time
	hashes  []uint64 // of the request's raw messages (and system member)
	// seq is the session's last sequence number after the request (and
	// its reply) were recorded; reply is the reply, nil when none was.
	seq   int64
	reply *agentmem.Message
}

// memos holds the memos of the sessions recently proxied.
type memos struct {
	seed   maphash.Seed
	mu     sync.Mutex
	m      map[store.Key]*memo
	hashes int
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
	if old := ms.m[k]; old != nil {
		ms.hashes -= len(old.hashes)
		delete(ms.m, k)
	}
	if m == nil || len(m.hashes) > maxMemoHashes {
		return
	}
	for other, om := range ms.m {
		if ms.hashes+len(m.hashes) <= maxMemoHashes {
			break
		}
		ms.hashes -= len(om.hashes)
		delete(ms.m, other)
	}
	ms.m[k] = m
	ms.hashes += len(m.hashes)
}

// elements returns the raw elements of a checked body's messages member.
func elements(fields map[string]json.RawMessage) []json.RawMessage {
	var raws []json.RawMessage
	_ = jsoncheck.Elements(fields["messages"], func(_ int, raw []byte) error {
		raws = append(raws, raw)
		return nil
	})
	return raws
}

// hash returns the hashes of a request's raw messages, preceded by that
// of its system member when the API has one (Anthropic).
func (ms *memos) hash(fields map[string]json.RawMessage, raws []json.RawMessage, system bool) []uint64 {
	hashes := make([]uint64, 0, len(raws)+1)
	if system {
		hashes = append(hashes, maphash.Bytes(ms.seed, fields["system"]))
	}
	for _, r := range raws {
		hashes = append(hashes, maphash.Bytes(ms.seed, r))
	}
	return hashes
}

// match returns the memo of a session that a request extends: the
// request's raw messages begin with the memo's, and the session (as of
// its creation) and its last sequence number are the memo's. It returns nil otherwise.
func (ms *memos) match(key store.Key, api string, sess *store.Session, hashes []uint64) *memo {
	m := ms.get(key)
	if m == nil || m.api != api || m.seq != sess.LastSeq || !m.created.Equal(sess.CreatedAt) || len(hashes) < len(m.hashes) || !slices.Equal(hashes[:len(m.hashes)], m.hashes) {
		return nil
	}
	return m
}

// tail returns the raw messages after the memo's.
func (m *memo) tail(raws []json.RawMessage, hashes []uint64) []json.RawMessage {
	return raws[len(m.hashes)-(len(hashes)-len(raws)):]
}

// quickBody splits a body that extends a memo without checking the
// memo's part again: the rest (the new messages, the other members) is
// checked as decodeBody checks a body. It returns false when the body
// does not extend the memo, or does not check (the general path then
// decodes it and says what is wrong).
func (p *Proxy) quickBody(body []byte, d dialect, key store.Key, sess *store.Session) (map[string]json.RawMessage, []json.RawMessage, []uint64, *memo, bool) {
	sc, ok := scanBody(body)
	if !ok {
		return nil, nil, nil, nil, false
	}
	hashes := p.memos.hash(sc.fields, sc.raws, d.systemMember())
	m := p.memos.match(key, d.name(), sess, hashes)
	if m == nil {
		return nil, nil, nil, nil, false
	}
	for k, v := range sc.fields {
		if k != "messages" && jsoncheck.Check(v) != nil {
			return nil, nil, nil, nil, false
		}
	}
	for _, r := range m.tail(sc.raws, hashes) {
		if jsoncheck.Check(r) != nil {
			return nil, nil, nil, nil, false
		}
	}
	return sc.fields, sc.raws, hashes, m, true
}

// fastRecord records a request that extends a memo (quickBody): its
// next message must be the memo's reply, if one was recorded, and what
// follows is appended, conditionally on the memo's sequence number. It
// returns false when the request does not go on so, or when the append
// lost a race (nothing was written then): the general path takes over.
func (p *Proxy) fastRecord(ctx context.Context, d dialect, key store.Key, m *memo, tail []json.RawMessage) (*recorded, []agentmem.Message, bool) {
	msgs, err := d.decodeMessages(tail)
	if err != nil {
		return nil, nil, false // the general path says what is wrong
	}
	if m.reply != nil {
		if len(msgs) == 0 || !sameMessage(msgs[0], *m.reply) {
			return nil, nil, false
		}
		msgs = msgs[1:]
	}
	rec := &recorded{rule: ruleContinuation, last: m.seq}
	if len(msgs) > 0 {
		seq := m.seq
		resp, err := p.svc.AppendMessages(ctx, store.MessagesRequest{Tenant: key.Tenant, SessionID: key.ID, Messages: msgs, ExpectedLastSeq: &seq})
		if err != nil {
			return nil, nil, false
		}
		rec.appended, rec.last = len(msgs), resp.LastSeq
	}
	p.fast.Add(1)
	return rec, msgs, true
}

// remember sets the memo of a request just recorded, when the session
// then holds exactly the request's conversation: after the rules new,
// continuation and rewind (not overlap or new_only, after which it holds
// more).
func (p *Proxy) remember(d dialect, key store.Key, created time.Time, rec *recorded, hashes []uint64) {
	switch rec.rule {
	case ruleNew, ruleContinuation, ruleRewind:
		p.memos.put(key, &memo{api: d.name(), created: created, hashes: hashes, seq: rec.last})
	default:
		p.memos.put(key, nil)
	}
}

// replied updates a session's memo after its reply was appended: seq is
// the session's last sequence number before the append and after.
func (p *Proxy) replied(key store.Key, before, after int64, reply agentmem.Message) {
	p.memos.mu.Lock()
	defer p.memos.mu.Unlock()
	if m := p.memos.m[key]; m != nil && m.seq == before && m.reply == nil {
		m.seq, m.reply = after, &reply
		return
	}
	if m := p.memos.m[key]; m != nil {
		p.memos.hashes -= len(m.hashes)
		delete(p.memos.m, key)
	}
}

// FastRecorded returns the number of requests recognised by the fast path
// (a request that resends, byte for byte, the last recorded request of
// its session and goes on from its reply) since the proxy was made.
func (p *Proxy) FastRecorded() int64 { return p.fast.Load() }
