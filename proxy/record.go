package proxy

import (
	"strconv"
	"strings"
)

// The record of a proxied call, kept in the metadata of the reply step it
// produced. With the log up to that step (the context at the step's
// sequence number, sessions.Service.ContextAt), it says what the model
// saw. The inspector's "what the model saw" page reads it.
const (
	// MetaAPI is "openai" or "anthropic": the API called, and the format
	// the context was rendered in.
	MetaAPI = "proxy.api"
	// MetaModel is the request's model.
	MetaModel = "proxy.model"
	// MetaBudget is the budget the context was fitted to, and MetaTokenizer
	// the tokenizer that counted it. The context was fitted with the newest
	// step truncated to fill the budget.
	MetaBudget    = "proxy.budget"
	MetaTokenizer = "proxy.tokenizer"
	// MetaTokens is what the messages sent cost, facts and recalled
	// turns included.
	MetaTokens = "proxy.tokens"
	// MetaKept, MetaDropped and MetaTruncated count the steps sent, left
	// out and truncated.
	MetaKept      = "proxy.steps_kept"
	MetaDropped   = "proxy.steps_dropped"
	MetaTruncated = "proxy.steps_truncated"
	// MetaHistory is how the request's messages were recognised (see
	// HeaderHistory).
	MetaHistory = "proxy.history"
	// MetaFacts and MetaRecall list the IDs of the facts and recalled
	// documents injected, comma-separated.
	MetaFacts  = "proxy.facts"
	MetaRecall = "proxy.recall"
	// MetaSeq is the session's last sequence number the context
	// reflected.
	MetaSeq = "proxy.context_seq"
	// MetaStream is "true" for a streamed answer.
	MetaStream = "proxy.stream"
	// MetaReplyTruncated is "true" when the reply recorded is cut short; the
	// client got all of it. The answer held more text and tool call
	// arguments than Config.MaxReplyBytes, or more than a step may hold.
	// MetaReplyBytes is then the answer's size in bytes, as the upstream
	// sent it (a stream's up to its last event).
	MetaReplyTruncated = "proxy.reply_truncated"
	MetaReplyBytes     = "proxy.reply_bytes"
	// MetaReplyInvalidUTF8 is "true" when the answer held bytes that are not
	// UTF-8. The client got them as they came, and the reply records U+FFFD
	// in their place, since a step's text is UTF-8.
	MetaReplyInvalidUTF8 = "proxy.reply_invalid_utf8"
)

// callRecord is what the metadata of a reply records.
type callRecord struct {
	API, Model, Tokenizer, History string
	Budget, Tokens                 int
	Kept, Dropped, Truncated       int
	Facts, Recall                  []string
	Seq                            int64
}

// maxMetaValue bounds a metadata value the record writes (a list of IDs
// is cut short, ending with "…").
const maxMetaValue = 1024

func (c callRecord) metadata() map[string]string {
	m := map[string]string{
		MetaAPI: c.API, MetaBudget: strconv.Itoa(c.Budget), MetaTokens: strconv.Itoa(c.Tokens), MetaTokenizer: c.Tokenizer,
		MetaKept: strconv.Itoa(c.Kept), MetaDropped: strconv.Itoa(c.Dropped), MetaTruncated: strconv.Itoa(c.Truncated),
		MetaHistory: c.History, MetaSeq: strconv.FormatInt(c.Seq, 10),
	}
	if c.Model != "" {
		m[MetaModel] = cut(c.Model)
	}
	if len(c.Facts) > 0 {
		m[MetaFacts] = cut(strings.Join(c.Facts, ","))
	}
	if len(c.Recall) > 0 {
		m[MetaRecall] = cut(strings.Join(c.Recall, ","))
	}
	return m
}

// cut bounds a metadata value.
func cut(s string) string {
	if len(s) <= maxMetaValue {
		return s
	}
	i := maxMetaValue
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// Call is the record of a proxied call, as a reply step's metadata
// carries it (CallOf).
type Call struct {
	// API is "openai" or "anthropic", also the format the context was
	// rendered in.
	API, Model, Tokenizer string
	// History is how the request's messages were recognised.
	History string
	// Budget is what the context was fitted to, Tokens what it cost
	// (facts and recalled turns included).
	Budget, Tokens           int
	Kept, Dropped, Truncated int
	// Facts and Recall are the IDs of the facts and recalled documents
	// injected.
	Facts, Recall []string
	// ContextSeq is the session's last sequence number the context
	// reflected.
	ContextSeq int64
	Stream     bool
	// ReplyTruncated: the reply was recorded cut short, from an answer
	// of ReplyBytes bytes. ReplyInvalidUTF8: the answer held bytes that
	// are not UTF-8, recorded as U+FFFD.
	ReplyTruncated   bool
	ReplyBytes       int64
	ReplyInvalidUTF8 bool
}

// CallOf reads the record of a proxied call from a reply step's metadata.
// It returns false when the step was not written by the proxy.
func CallOf(md map[string]string) (*Call, bool) {
	api := md[MetaAPI]
	if api == "" || md[MetaBudget] == "" {
		return nil, false
	}
	num := func(k string) int {
		n, _ := strconv.Atoi(md[k])
		return n
	}
	list := func(k string) []string {
		if md[k] == "" {
			return nil
		}
		return strings.Split(md[k], ",")
	}
	seq, _ := strconv.ParseInt(md[MetaSeq], 10, 64)
	size, _ := strconv.ParseInt(md[MetaReplyBytes], 10, 64)
	return &Call{API: api, Model: md[MetaModel], Tokenizer: md[MetaTokenizer], History: md[MetaHistory],
		Budget: num(MetaBudget), Tokens: num(MetaTokens), Kept: num(MetaKept), Dropped: num(MetaDropped), Truncated: num(MetaTruncated),
		Facts: list(MetaFacts), Recall: list(MetaRecall), ContextSeq: seq, Stream: md[MetaStream] == "true",
		ReplyTruncated: md[MetaReplyTruncated] == "true", ReplyBytes: size, ReplyInvalidUTF8: md[MetaReplyInvalidUTF8] == "true"}, true
}
