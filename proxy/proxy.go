package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/internal/httpbody"
	"github.com/agentmem/agentmem/internal/jsoncheck"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// Request headers the proxy reads.
const (
	// HeaderSession names the session to record the conversation in,
	// created on first use in the caller's tenant. Without it a request
	// passes through and nothing is recorded.
	HeaderSession = "X-Agentmem-Session"
	// HeaderUser is the user of a session the request creates (whose
	// facts X-Agentmem-Facts injects); it is ignored for an existing
	// session.
	HeaderUser = "X-Agentmem-User"
	// HeaderBudget is the most tokens the messages sent may cost. Without
	// it, the budget is the model's context window less the reply's
	// max_tokens and the tools' definitions (see Config.ContextWindows).
	HeaderBudget = "X-Agentmem-Budget"
	// HeaderFacts asks for up to K of the session user's facts in the
	// system prompt.
	HeaderFacts = "X-Agentmem-Facts"
	// HeaderRecall asks for up to K turns recalled from the tenant's other
	// sessions, in the system prompt. When the session has a user, the turns
	// come from that user's sessions.
	HeaderRecall = "X-Agentmem-Recall"
	// HeaderPinning is the pinning of a session the request creates, a JSON
	// object as the API's "pinning" ({"system_prompts":true,...}). Without
	// it, the pinning is agentmem.ChatPinning: the system prompts and the
	// newest summary, since a chat's first question is one among many. It is
	// ignored for an existing session.
	HeaderPinning = "X-Agentmem-Pinning"
	// HeaderAutoCompact is the automatic compaction of a session the
	// request creates, a JSON object as the API's "auto_compact"
	// ({"max_tokens":N,...}; see store.AutoCompact); without it, none. It
	// is ignored for an existing session.
	HeaderAutoCompact = "X-Agentmem-Auto-Compact"
)

// Response headers that say what the context held (on every answer of a
// request that names a session, the upstream's errors included).
const (
	// HeaderContextTokens is what the messages sent cost (agentmem's
	// cost model, with the tokenizer of HeaderTokenizer).
	HeaderContextTokens = "X-Agentmem-Context-Tokens"
	// HeaderTokenizer names the tokenizer that counted them.
	HeaderTokenizer = "X-Agentmem-Tokenizer"
	// HeaderStepsKept, HeaderStepsDropped and HeaderStepsTruncated count
	// the session's steps sent, left out, and sent with their
	// observations truncated.
	HeaderStepsKept      = "X-Agentmem-Steps-Kept"
	HeaderStepsDropped   = "X-Agentmem-Steps-Dropped"
	HeaderStepsTruncated = "X-Agentmem-Steps-Truncated"
	// HeaderHistory says how the request's messages were recognised against
	// the session's: new, continuation, overlap, new_only or rewind (see
	// docs/proxy.md). HeaderAppended says how many were appended, and
	// HeaderRewound how many held ones were popped.
	HeaderHistory  = "X-Agentmem-History"
	HeaderAppended = "X-Agentmem-Appended"
	HeaderRewound  = "X-Agentmem-Rewound"
	// HeaderFactsInjected and HeaderRecallInjected count the facts and
	// recalled turns added to the system prompt.
	HeaderFactsInjected  = "X-Agentmem-Facts-Injected"
	HeaderRecallInjected = "X-Agentmem-Recall-Injected"
	// HeaderCreated is "true" when the request created the session.
	HeaderCreated = "X-Agentmem-Session-Created"
)

// RequestHeaders are the agentmem request headers the proxy reads, and
// ResponseHeaders those of its answers. A server lets browser pages send
// and read them (CORS).
var (
	RequestHeaders  = []string{HeaderSession, HeaderUser, HeaderBudget, HeaderFacts, HeaderRecall, HeaderPinning, HeaderAutoCompact}
	ResponseHeaders = []string{HeaderSession, HeaderCreated, HeaderBudget, HeaderContextTokens, HeaderTokenizer, HeaderStepsKept,
		HeaderStepsDropped, HeaderStepsTruncated, HeaderHistory, HeaderAppended, HeaderRewound, HeaderFactsInjected, HeaderRecallInjected}
)

// Defaults and bounds.
const (
	// DefaultContextWindow is the context window of a model that
	// Config.ContextWindows does not know.
	DefaultContextWindow = 128_000
	// DefaultOutputTokens is kept for the reply when an OpenAI request
	// sets neither max_completion_tokens nor max_tokens.
	DefaultOutputTokens = 4096
	// DefaultMaxBodyBytes bounds a request body when Config.MaxBodyBytes
	// is 0: requests carry whole histories, with images.
	DefaultMaxBodyBytes = 32 << 20
	// DefaultMaxReplyBytes is Config.MaxReplyBytes when it is 0. It is far
	// more than a model writes in one reply (128,000 tokens of text are
	// about 0.5 MB), and little enough for many calls at once.
	DefaultMaxReplyBytes = 1 << 20
	// MaxInject bounds X-Agentmem-Facts and X-Agentmem-Recall.
	MaxInject = 50
	// InjectShare is the share of the budget kept for the facts, and
	// again for the recalled turns, when they are asked for.
	InjectShare = facts.DefaultShare
	// historyHead and historyTail (plus the request's messages) are the
	// steps read at each end of a session's working set. They serve to
	// recognise a request of new messages only.
	historyHead, historyTail = 8, 8
)

// RecallHeader introduces the recalled turns in the system prompt.
const RecallHeader = sessions.RecallHeader

// DefaultContextWindows are the context windows of known models, by name
// prefix (the longest matching prefix wins).
var DefaultContextWindows = map[string]int{
	"gpt-4.1":       1_047_576,
	"gpt-4o":        128_000,
	"chatgpt-4o":    128_000,
	"gpt-4-turbo":   128_000,
	"gpt-4.5":       128_000,
	"gpt-4":         8_192,
	"gpt-3.5-turbo": 16_385,
	"gpt-5":         400_000,
	"o1":            200_000,
	"o3":            200_000,
	"o4":            200_000,
	"claude":        200_000,
}

// Upstream is a provider the proxy forwards to.
type Upstream struct {
	// BaseURL is the provider's base URL as its SDK takes it. For OpenAI
	// (and compatible servers) it is the URL before /chat/completions, such
	// as https://api.openai.com/v1. For Anthropic it is the URL before
	// /v1/messages, such as https://api.anthropic.com. Empty: the route
	// answers 400 upstream_not_configured.
	BaseURL string
	// APIKey, when set, is sent to the provider on every request
	// (OpenAI: Authorization: Bearer; Anthropic: x-api-key) instead of
	// the caller's credentials.
	APIKey string
}

// Config configures a Proxy.
type Config struct {
	// Sessions records the conversations. Required.
	Sessions *sessions.Service
	// OpenAI serves POST /v1/chat/completions, Anthropic POST
	// /v1/messages.
	OpenAI, Anthropic Upstream
	// Client sends the upstream requests. Nil means a client of its own,
	// with no overall timeout: a stream lasts as long as the model writes,
	// and the caller's cancellation ends it. Its CheckRedirect is replaced:
	// the proxy follows no redirect.
	Client *http.Client
	// ContextWindows maps model name prefixes to their context windows,
	// in tokens, on top of DefaultContextWindows; DefaultContextWindow
	// (0: DefaultContextWindow) is that of other models.
	ContextWindows       map[string]int
	DefaultContextWindow int
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxReplyBytes bounds what the proxy holds of one answer to record its
	// reply. A whole answer up to it is read before it is relayed. Of a
	// larger one, and of a stream, the proxy holds the text and tool call
	// arguments it keeps, plus at most 64 KiB of structure and a stream's
	// event being read. A reply larger than that reaches the client whole
	// and is recorded cut short, marked MetaReplyTruncated. So is one larger
	// than a step may be (store.MaxStepBytes as JSON). 0 means
	// DefaultMaxReplyBytes.
	MaxReplyBytes int64
	// Logger logs what fails after the answer has begun; nil discards.
	Logger *slog.Logger
}

// Proxy serves the OpenAI- and Anthropic-compatible routes. Its methods
// are safe for concurrent use.
type Proxy struct {
	cfg     Config
	svc     *sessions.Service
	client  *http.Client
	windows map[string]int
	log     *slog.Logger
	memos   *memos
	fast    atomic.Int64 // requests recorded by the fast path (memo.go)
	// observers watch the calls (observe.go).
	observers atomic.Pointer[[]Observer]
}

// New returns a proxy for cfg.
func New(cfg Config) (*Proxy, error) {
	if cfg.Sessions == nil {
		return nil, errors.New("proxy: Config.Sessions is required")
	}
	for _, u := range []*Upstream{&cfg.OpenAI, &cfg.Anthropic} {
		u.BaseURL = strings.TrimRight(u.BaseURL, "/")
		if u.BaseURL != "" && !strings.HasPrefix(u.BaseURL, "http://") && !strings.HasPrefix(u.BaseURL, "https://") {
			return nil, fmt.Errorf("proxy: upstream base URL %q: want an http:// or https:// URL", u.BaseURL)
		}
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxReplyBytes < 0 {
		return nil, fmt.Errorf("proxy: Config.MaxReplyBytes is %d: want a positive number of bytes, or 0 for %d", cfg.MaxReplyBytes, DefaultMaxReplyBytes)
	}
	if cfg.MaxReplyBytes == 0 {
		cfg.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if cfg.DefaultContextWindow == 0 {
		cfg.DefaultContextWindow = DefaultContextWindow
	}
	if cfg.DefaultContextWindow < 0 {
		return nil, errors.New("proxy: Config.DefaultContextWindow is negative")
	}
	windows := make(map[string]int, len(DefaultContextWindows)+len(cfg.ContextWindows))
	for k, v := range DefaultContextWindows {
		windows[k] = v
	}
	for k, v := range cfg.ContextWindows {
		if k == "" || v <= 0 {
			return nil, fmt.Errorf("proxy: Config.ContextWindows: %q=%d: want a model name prefix and a positive number of tokens", k, v)
		}
		windows[k] = v
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var client http.Client
	if cfg.Client != nil {
		client = *cfg.Client
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 256 // many agents, one provider
		client.Transport = t
	}
	// No redirect is followed, whatever the client given. Following one
	// would send the request's body and the provider key to wherever the
	// upstream points. forward answers a redirect with 502.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, w := range UpstreamWarnings(cfg.OpenAI, cfg.Anthropic) {
		cfg.Logger.Warn(w)
	}
	return &Proxy{cfg: cfg, svc: cfg.Sessions, client: &client, windows: windows, log: cfg.Logger, memos: newMemos()}, nil
}

// UpstreamWarnings says what looks wrong about the base URLs of an OpenAI
// and an Anthropic upstream; either may be empty. A base URL the
// provider's SDK would not take sends every call to a path that does not
// exist, and the caller sees only the provider's 404. New logs them.
func UpstreamWarnings(openAI, anthropic Upstream) []string {
	var out []string
	if u, err := url.Parse(strings.TrimRight(openAI.BaseURL, "/")); openAI.BaseURL != "" && err == nil {
		if u.Path == "" {
			out = append(out, fmt.Sprintf("the OpenAI upstream %s has no path: calls go to %s/chat/completions; "+
				"OpenAI's base URL is the one before /chat/completions, usually ending in /v1 (https://api.openai.com/v1)", u.Redacted(), u.Redacted()))
		}
		if strings.HasSuffix(u.Path, "/chat/completions") {
			out = append(out, fmt.Sprintf("the OpenAI upstream %s names the route itself: calls go to %s/chat/completions; give the URL before /chat/completions", u.Redacted(), u.Redacted()))
		}
	}
	if u, err := url.Parse(strings.TrimRight(anthropic.BaseURL, "/")); anthropic.BaseURL != "" && err == nil {
		if strings.HasSuffix(u.Path, "/v1") || strings.HasSuffix(u.Path, "/v1/messages") {
			out = append(out, fmt.Sprintf("the Anthropic upstream %s ends in %s: calls go to %s/v1/messages; "+
				"Anthropic's base URL is the one before /v1/messages (https://api.anthropic.com)", u.Redacted(), u.Path[strings.LastIndex(u.Path, "/v1"):], u.Redacted()))
		}
	}
	return out
}

// ChatCompletions serves POST /v1/chat/completions (OpenAI's Chat
// Completions API). It returns an error only when it has written nothing.
// The caller writes it as an error response (an *Error, or an error of the
// sessions service). Errors of the upstream provider are relayed as they
// came.
func (p *Proxy) ChatCompletions(w http.ResponseWriter, r *http.Request) error {
	return p.observed(w, r, openAI{})
}

// Messages serves POST /v1/messages (Anthropic's Messages API), as
// ChatCompletions does.
func (p *Proxy) Messages(w http.ResponseWriter, r *http.Request) error {
	return p.observed(w, r, anthropic{})
}

// dialect is one provider API's wire format.
type dialect interface {
	// name is the API's name ("openai", "anthropic"), also the render
	// format the context is rendered in.
	name() string
	upstream(c *Config) Upstream
	// path is the route's path after the base URL.
	path() string
	// route is the path of the proxy's route.
	route() string
	// flag names the serve flag that configures the upstream.
	flag() string
	// decode returns the request's messages in canonical form.
	decode(body map[string]json.RawMessage) ([]agentmem.Message, error)
	// decodeMessages decodes elements of the request's messages member
	// (not the system prompt), as decode does.
	decodeMessages(raws []json.RawMessage) ([]agentmem.Message, error)
	// systemMember reports whether the system prompt is a member of its
	// own (Anthropic's system).
	systemMember() bool
	// encode sets the request's messages (rendered in the API's format).
	encode(body map[string]json.RawMessage, msgs []agentmem.Message) error
	// outputTokens is what the request keeps for the reply.
	outputTokens(body map[string]json.RawMessage) int
	// credentials sets the upstream request's credentials.
	credentials(out, in *http.Request, key string)
	// reply returns the assistant's message of a whole answer, or false.
	reply(body []byte) (agentmem.Message, bool)
	// stream returns an accumulator of a streamed answer that holds what
	// the budget lets it.
	stream(bu *budget) accumulator
}

// accumulator follows a streamed answer, event by event, holding as much
// of the reply as its budget lets it.
type accumulator interface {
	// event takes one server-sent event and reports whether it is the
	// answer's last (the proxy records the reply before relaying it).
	event(name string, data []byte) (last bool)
	// missed says that an event was not taken, or taken cut short because it
	// was too large to hold. The reply lacks part of it, and holds nothing
	// more of text or arguments.
	missed()
	// reply returns the assistant's message once the answer is
	// complete, or false.
	reply(atEOF bool) (agentmem.Message, bool)
	// truncated reports whether the reply was cut short (the budget, a
	// missed event); held is what the accumulator holds.
	truncated() bool
	held() int
}

// call is a request that names a session: what was recorded and sent.
type call struct {
	key    store.Key
	seq    int64 // the session's last sequence number after the request was recorded
	body   []byte
	header http.Header // the agentmem response headers
	meta   map[string]string
	// What the context held, and the request's messages appended.
	tokens, kept, dropped, appended int
}

// handle serves a call, filling in st and tm as it goes.
func (p *Proxy) handle(w http.ResponseWriter, r *http.Request, d dialect, st *Stats, tm *timing) error {
	up := d.upstream(&p.cfg)
	if up.BaseURL == "" {
		return &Error{Status: http.StatusBadRequest, Code: CodeUpstreamNotConfigured,
			Message: fmt.Sprintf("this server has no upstream provider for the %s API: start it with %s (or its environment variable)", d.name(), d.flag())}
	}
	body, err := httpbody.Read(http.MaxBytesReader(w, r.Body, p.cfg.MaxBodyBytes), r.ContentLength, p.cfg.MaxBodyBytes)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: api.CodeBodyTooLarge,
				Message: fmt.Sprintf("the request body is larger than %d bytes", p.cfg.MaxBodyBytes)}
		}
		return err
	}
	sid := r.Header.Get(HeaderSession)
	if sid == "" {
		return p.forward(w, r, d, up, body, nil, st, tm)
	}
	c, err := p.prepare(r, d, sid, body)
	if err != nil {
		return err
	}
	st.ContextTokens, st.StepsKept, st.StepsDropped, st.Appended = c.tokens, c.kept, c.dropped, c.appended
	return p.forward(w, r, d, up, c.body, c, st, tm)
}

// options are the agentmem request headers.
type options struct {
	budget, facts, recall int
	user                  string
	// The settings of a session the request creates.
	pinning *agentmem.Pinning
	auto    *store.AutoCompact
}

// headerJSON decodes a header whose value is a JSON object into v,
// strictly, and reports whether the header was given. Unknown members,
// repeated keys and values of the wrong type are refused, naming them.
func headerJSON(r *http.Request, name string, v any) (bool, error) {
	raw := strings.TrimSpace(r.Header.Get(name))
	if raw == "" {
		return false, nil
	}
	if raw[0] != '{' {
		return true, invalid(name, "must be a JSON object, not %.40q", raw)
	}
	if err := jsoncheck.Decode([]byte(raw), v); err != nil {
		var je *jsoncheck.Error
		if errors.As(err, &je) && je.Path != "" {
			return true, invalid(name, "%s %s", je.Path, je.Reason)
		}
		return true, invalid(name, "must be a JSON object: %v", err)
	}
	return true, nil
}

// headerInt reads a non-negative integer header, at most max.
func headerInt(r *http.Request, name string, max int) (int, error) {
	v := r.Header.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > max {
		return 0, invalid(name, "must be a whole number from 0 to %d, not %q", max, v)
	}
	return n, nil
}

func (p *Proxy) options(r *http.Request) (options, error) {
	var o options
	var err error
	if o.budget, err = headerInt(r, HeaderBudget, p.svc.MaxContextTokens()); err != nil {
		return o, err
	}
	if o.facts, err = headerInt(r, HeaderFacts, MaxInject); err != nil {
		return o, err
	}
	if o.recall, err = headerInt(r, HeaderRecall, MaxInject); err != nil {
		return o, err
	}
	if o.facts > 0 && !p.svc.Features().Facts {
		return o, &Error{Status: http.StatusBadRequest, Code: api.CodeNotConfigured, Field: HeaderFacts, Message: "facts are not configured on this server"}
	}
	if o.recall > 0 && !p.svc.Features().Recall {
		return o, &Error{Status: http.StatusBadRequest, Code: api.CodeNotConfigured, Field: HeaderRecall, Message: "recall is not configured on this server"}
	}
	o.user = r.Header.Get(HeaderUser)
	// A member the header leaves out is false, as in the API's body.
	var pin agentmem.Pinning
	given, err := headerJSON(r, HeaderPinning, &pin)
	if err != nil {
		return o, err
	}
	if !given {
		pin = agentmem.ChatPinning
	}
	o.pinning = &pin
	var auto store.AutoCompact
	if given, err = headerJSON(r, HeaderAutoCompact, &auto); err != nil {
		return o, err
	}
	if given {
		if err := store.ValidateAutoCompact(&auto); err != nil {
			return o, settingsError(err)
		}
		o.auto = &auto
	}
	return o, nil
}

// settingsError converts an *agentmem.InvalidError about a session's
// automatic compaction ("auto_compact.max_tokens") into the proxy's error
// about the header that carries it. Other errors are returned as they are.
func settingsError(err error) error {
	var ie *agentmem.InvalidError
	if errors.As(err, &ie) {
		if member, ok := strings.CutPrefix(ie.Field, "auto_compact."); ok {
			return invalid(HeaderAutoCompact, "%s %s", member, ie.Reason)
		}
	}
	return err
}

// decodeBody decodes a request body: a JSON object whose members are
// kept as they came, and their keys in order. What encoding/json would
// change silently (invalid UTF-8, a lone surrogate escape, a repeated
// key) is refused: what is recorded is what was sent.
func decodeBody(body []byte) (map[string]json.RawMessage, []string, error) {
	if err := jsoncheck.Check(body); err != nil {
		var je *jsoncheck.Error
		if errors.As(err, &je) {
			return nil, nil, invalid(je.Path, "%s", je.Reason)
		}
		return nil, nil, invalid("", "%v", err)
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' {
		return nil, nil, invalid("", "the request body must be a JSON object")
	}
	fields := map[string]json.RawMessage{}
	var keys []string
	_ = jsoncheck.Members(body, func(key, raw []byte) error {
		fields[string(key)] = raw
		keys = append(keys, string(key))
		return nil
	})
	return fields, keys, nil
}

// decodeRequest decodes a request body: its members, their keys in
// order, the mark of its messages (memo.go), and its messages.
func (p *Proxy) decodeRequest(d dialect, body []byte) (map[string]json.RawMessage, []string, mark, []agentmem.Message, error) {
	fields, keys, err := decodeBody(body)
	if err != nil {
		return nil, nil, mark{}, nil, err
	}
	mk := p.memos.markOf(fields, d.systemMember())
	msgs, err := d.decode(fields)
	if err != nil {
		return nil, nil, mark{}, nil, err
	}
	return fields, keys, mk, msgs, nil
}

// prepare records a request's new messages in its session and builds the
// body to send: the session's context in place of the messages. Whatever
// can refuse the request is checked before anything is written (see
// refuse.go): a refused request changes nothing.
func (p *Proxy) prepare(r *http.Request, d dialect, sid string, body []byte) (*call, error) {
	ctx := r.Context()
	tenant := auth.TenantFrom(ctx)
	if err := store.ValidateID(sid); err != nil {
		var ie *agentmem.InvalidError
		if errors.As(err, &ie) {
			return nil, invalid(HeaderSession, "%s", ie.Reason)
		}
		return nil, invalid(HeaderSession, "%v", err)
	}
	o, err := p.options(r)
	if err != nil {
		return nil, err
	}
	key := store.Key{Tenant: tenant, ID: sid}
	sess, err := p.svc.Get(ctx, tenant, sid)
	if err != nil && !errors.Is(err, agentmem.ErrNotFound) {
		return nil, err
	}
	var (
		fields map[string]json.RawMessage
		keys   []string
		mk     mark
		msgs   []agentmem.Message
		rec    *recorded
		// The fast path: the memo a body extends, and its new messages.
		fast    *memo
		fastNew []agentmem.Message
	)
	if sess != nil {
		if sc, m, memo, ok := p.quickBody(body, d, key, sess); ok {
			if fastNew, ok = p.fastMessages(d, memo, sc.tail); ok {
				fields, keys, mk, fast = sc.fields, sc.keys, m, memo
			}
		}
	}
	if fast == nil {
		if fields, keys, mk, msgs, err = p.decodeRequest(d, body); err != nil {
			return nil, err
		}
	}
	// What depends on the request alone.
	var model string
	_ = json.Unmarshal(fields["model"], &model)
	counter := p.counterFor(model)
	budget := o.budget
	if budget > p.svc.MaxContextTokens() {
		return nil, invalid(HeaderBudget, "is %d tokens; it must be at most this server's maximum context of %d tokens", budget, p.svc.MaxContextTokens())
	}
	if budget == 0 {
		if budget, err = p.defaultBudget(model, d, fields, counter); err != nil {
			return nil, err
		}
	}
	// The facts and recalled turns get their share of the budget, which
	// the steps leave out (sessions.Service.Context).
	var injects sessions.ContextRequest
	if o.facts > 0 {
		injects.Facts = &sessions.FactsRequest{K: o.facts, Share: InjectShare}
	}
	if o.recall > 0 {
		injects.Recall = &sessions.RecallRequest{K: o.recall, Share: InjectShare}
	}
	user := o.user
	if sess != nil {
		user = sess.UserID
	}
	if o.facts > 0 && user == "" {
		return nil, invalid(HeaderFacts, "the session has no user, so it has no facts to inject: create it with %s", HeaderUser)
	}
	format, err := render.ByName(d.name())
	if err != nil {
		return nil, err
	}
	// The pinning the context applies: the session's, or the one the
	// request would create it with.
	pin := *o.pinning
	if sess != nil {
		pin = sess.EffectivePinning()
	}
	injects.Budget = budget
	fc := &fitCheck{format: format, counter: counter, fit: budget - sessions.Reserved(&injects), pin: pin}
	// What depends on the session too, checked on what the request would
	// make of it, then written.
	if fast != nil {
		var ok bool
		if rec, ok, err = p.fastRecord(ctx, key, fast, fastNew, fc); err != nil {
			return nil, err
		}
		if ok {
			msgs = fastNew
		} else if fields, keys, mk, msgs, err = p.decodeRequest(d, body); err != nil {
			return nil, err
		}
	}
	created := false
	if rec == nil {
		if sess == nil {
			if err := p.checkNew(tenant, sid, msgs, fc); err != nil {
				return nil, err
			}
			if sess, created, err = p.createSession(ctx, tenant, sid, o); err != nil {
				return nil, err
			}
		}
		if rec, err = p.record(ctx, tenant, sid, msgs, fc); err != nil {
			p.memos.put(key, nil)
			return nil, err
		}
	}
	p.remember(d, key, sess.CreatedAt, rec, mk)
	if injects.Recall != nil {
		injects.Recall.Query = newestUserText(msgs)
	}
	cx, err := p.svc.Context(ctx, sessions.ContextRequest{Tenant: tenant, SessionID: sid, Budget: budget,
		Format: d.name(), Counter: counter, TruncateToFill: true, Facts: injects.Facts, Recall: injects.Recall})
	if errors.Is(err, sessions.ErrNoUser) {
		return nil, invalid(HeaderFacts, "the session has no user, so it has no facts to inject: create it with %s", HeaderUser)
	}
	if err != nil {
		return nil, err
	}
	out, tokens := cx.Messages, cx.Tokens
	factIDs := make([]string, len(cx.Facts))
	for i, h := range cx.Facts {
		factIDs[i] = h.Fact.ID
	}
	recallIDs := cx.Recalled
	if err := d.encode(fields, out); err != nil {
		return nil, err
	}
	sent, err := encodeBody(keys, fields)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(HeaderSession, sid)
	if created {
		h.Set(HeaderCreated, "true")
	}
	h.Set(HeaderBudget, strconv.Itoa(budget))
	h.Set(HeaderContextTokens, strconv.Itoa(tokens))
	h.Set(HeaderTokenizer, counter.Name())
	h.Set(HeaderStepsKept, strconv.Itoa(len(cx.Steps)))
	h.Set(HeaderStepsDropped, strconv.Itoa(cx.DroppedSteps))
	h.Set(HeaderStepsTruncated, strconv.Itoa(len(cx.Truncated)))
	h.Set(HeaderHistory, rec.rule)
	h.Set(HeaderAppended, strconv.Itoa(rec.appended))
	h.Set(HeaderRewound, strconv.Itoa(rec.rewound))
	h.Set(HeaderFactsInjected, strconv.Itoa(len(factIDs)))
	h.Set(HeaderRecallInjected, strconv.Itoa(len(recallIDs)))
	meta := callRecord{API: d.name(), Model: model, Budget: budget, Tokens: tokens, Tokenizer: counter.Name(),
		Kept: len(cx.Steps), Dropped: cx.DroppedSteps, Truncated: len(cx.Truncated), History: rec.rule,
		Facts: factIDs, Recall: recallIDs, Seq: cx.LastSeq}
	return &call{key: key, seq: rec.last, body: sent, header: h, meta: meta.metadata(),
		tokens: tokens, kept: len(cx.Steps), dropped: cx.DroppedSteps, appended: rec.appended}, nil
}

// createSession creates the session, with the user and the settings of the
// request's headers. It reports whether this request created it, rather
// than a concurrent one whose session it returns.
func (p *Proxy) createSession(ctx context.Context, tenant, sid string, o options) (*store.Session, bool, error) {
	sess, err := p.svc.Create(ctx, store.CreateRequest{ID: sid, Tenant: tenant, UserID: o.user, Agent: "proxy",
		Pinning: o.pinning, AutoCompact: o.auto})
	switch {
	case err == nil:
		p.memos.put(store.Key{Tenant: tenant, ID: sid}, nil) // of a session deleted since
		return sess, true, nil
	case errors.Is(err, agentmem.ErrConflict): // created by a concurrent request
		sess, err = p.svc.Get(ctx, tenant, sid)
		return sess, false, err
	case errors.Is(err, agentmem.ErrInvalid):
		var ie *agentmem.InvalidError
		if errors.As(err, &ie) && ie.Field == "user_id" {
			return nil, false, invalid(HeaderUser, "%s", ie.Reason)
		}
		return nil, false, settingsError(err)
	}
	return nil, false, err
}

// recorded is what recording a request's messages did.
type recorded struct {
	rule              string
	appended, rewound int
	// last is the session's last sequence number after it.
	last int64
}

// record recognises a request's messages against the session's working set
// (planHistory) and records what is new, conditionally on the working set
// it read. If another writer got in between, it reads again and starts
// over, within the service's retry policy (sessions.Service.Retry).
func (p *Proxy) record(ctx context.Context, tenant, sid string, msgs []agentmem.Message, fc *fitCheck) (*recorded, error) {
	var rec *recorded
	err := p.svc.Retry(ctx, tenant, sid, "record", func(int) error {
		var err error
		rec, err = p.recordOnce(ctx, tenant, sid, msgs, fc)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// recordOnce recognises the request's messages and checks what that would
// make of the session (checkPlan). It then records it in one write
// conditional on the working set it read (sessions.Service.Record).
func (p *Proxy) recordOnce(ctx context.Context, tenant, sid string, msgs []agentmem.Message, fc *fitCheck) (*recorded, error) {
	// The ends of the working set first: enough for a request of new
	// messages only (planNewOnly), the common case after the first.
	h, err := p.svc.History(ctx, sessions.HistoryRequest{Tenant: tenant, SessionID: sid, Head: historyHead, Tail: len(msgs) + historyTail})
	if err != nil {
		return nil, err
	}
	partial := h.Omitted > 0
	pl, ok := planNewOnly(h.Steps[:h.Head], h.Steps[h.Head:], partial, msgs)
	if !ok {
		if partial {
			if h, err = p.svc.History(ctx, sessions.HistoryRequest{Tenant: tenant, SessionID: sid}); err != nil {
				return nil, err
			}
			partial = false
		}
		if pl, err = planHistory(h.Steps, msgs); err != nil {
			return nil, err
		}
	}
	if err := p.checkPlan(ctx, tenant, sid, h, partial, pl, fc); err != nil {
		return nil, err
	}
	keep := -1
	if pl.rule == ruleRewind {
		keep = pl.from
	}
	resp, err := p.svc.Record(ctx, sessions.RecordRequest{Tenant: tenant, SessionID: sid, ExpectedLastSeq: h.LastSeq,
		System: pl.system, Keep: keep, Messages: pl.appended})
	if err != nil {
		return nil, err
	}
	return &recorded{rule: pl.rule, appended: resp.Appended, rewound: resp.Rewound, last: resp.LastSeq}, nil
}

// counterFor returns the tokenizer of a model: o200k_base for OpenAI's
// GPT-4o and later, and cl100k_base for GPT-4 and GPT-3.5. Any other model
// gets the sessions service's default, since Claude's tokenizer is not
// public.
func (p *Proxy) counterFor(model string) tokenizer.Counter {
	name := ""
	switch {
	case hasAnyPrefix(model, "gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "o1", "o3", "o4"):
		name = tokenizer.O200kBase
	case hasAnyPrefix(model, "gpt-4", "gpt-3.5"):
		name = tokenizer.CL100kBase
	}
	if name != "" {
		if c, err := tokenizer.Get(name); err == nil {
			return c
		}
	}
	return p.svc.Counter()
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// ContextWindow returns the context window the proxy assumes for a model:
// that of the longest prefix of Config.ContextWindows or
// DefaultContextWindows that matches, else Config.DefaultContextWindow.
func (p *Proxy) ContextWindow(model string) int {
	best, window := -1, p.cfg.DefaultContextWindow
	for prefix, n := range p.windows {
		if strings.HasPrefix(model, prefix) && len(prefix) > best {
			best, window = len(prefix), n
		}
	}
	return window
}

// defaultBudget is the budget of a request without X-Agentmem-Budget. It
// is the model's context window less what the request keeps for the reply
// and what its other members (tools, response format) cost. It is capped
// at the service's maximum context.
func (p *Proxy) defaultBudget(model string, d dialect, body map[string]json.RawMessage, c tokenizer.Counter) (int, error) {
	window := p.ContextWindow(model)
	other := 0
	for k, v := range body {
		switch k {
		case "messages", "system", "model", "stream", "max_tokens", "max_completion_tokens":
		default:
			other += c.Count(string(v))
		}
	}
	out := d.outputTokens(body)
	budget := min(window-out-other, p.svc.MaxContextTokens())
	if budget < 1 {
		return 0, invalid(HeaderBudget, "the model %q has a context window of %d tokens; the reply's %d and the request's other members' %d leave none for the messages: set %s", model, window, out, other, HeaderBudget)
	}
	return budget, nil
}

// newestUserText returns the text of the newest user message that has
// one: what the recalled turns are found by.
func newestUserText(msgs []agentmem.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == agentmem.RoleUser && msgs[i].Text() != "" {
			return msgs[i].Text()
		}
	}
	return ""
}

// redact hides a password in a URL for the log.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// hopHeaders are not forwarded either way.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true,
}

// forward sends body to the upstream and relays its answer; with a call,
// it records the reply.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, d dialect, up Upstream, body []byte, c *call, st *Stats, tm *timing) error {
	ctx := r.Context()
	target := up.BaseURL + d.path()
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery // Anthropic's ?beta=true
	}
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, vs := range r.Header {
		if hopHeaders[k] || k == "Host" || k == "Accept-Encoding" || k == "Cookie" || k == "Authorization" || k == "X-Api-Key" ||
			k == "Origin" || strings.HasPrefix(k, "X-Agentmem-") {
			continue
		}
		out.Header[k] = vs
	}
	d.credentials(out, r, up.APIKey)
	out.Header.Set("Content-Type", "application/json")
	start := time.Now()
	tm.sent = start
	resp, err := p.client.Do(out)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.log.WarnContext(ctx, "the upstream could not be reached", "upstream", d.name(), "url", redact(target), "err", err)
		return &Error{Status: http.StatusBadGateway, Code: CodeUpstreamUnreachable, Err: err,
			Message: fmt.Sprintf("the %s upstream could not be reached: %v", d.name(), err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return redirected(d, resp)
	}
	h := w.Header()
	for k, vs := range resp.Header {
		// The server's CORS headers stand, not the provider's; its Vary
		// (Origin) is kept beside the provider's.
		switch {
		case hopHeaders[k] || strings.HasPrefix(k, "Access-Control-"):
		case k == "Vary":
			h[k] = append(slices.Clip(h[k]), vs...)
		default:
			h[k] = vs
		}
	}
	if c != nil {
		for k, vs := range c.header {
			h[k] = vs
		}
	}
	st.Status = resp.StatusCode
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		// The provider has no such route: most often a base URL that lacks
		// or repeats a part of the path. Say which URL was called.
		p.log.WarnContext(ctx, "the upstream has no such route: check its base URL", "upstream", d.name(), "url", redact(target), "status", resp.StatusCode)
	}
	if ok && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var acc accumulator
		if c != nil {
			acc = d.stream(newBudget(p.cfg.MaxReplyBytes))
		}
		st.Stream = true
		p.relayStream(w, resp, acc, c, st, tm)
		return nil
	}
	if !ok || c == nil {
		w.WriteHeader(resp.StatusCode)
		st.Cut = !p.copyBody(w, resp.Body, tm)
		return nil
	}
	return p.relayWhole(w, resp, d, c, st, tm, start)
}

// relayWhole relays a whole (not streamed) answer of a call and records
// its reply before the client has the end of it. An answer of at most
// Config.MaxReplyBytes is read whole, recorded, then relayed; one the
// upstream cuts off fails with 502. A larger one is relayed as it comes
// and read by a reducer that keeps what the reply's budget holds. Its last
// piece is held back until the reply, cut short, is recorded. If the
// upstream cuts such an answer off, nothing is recorded.
func (p *Proxy) relayWhole(w http.ResponseWriter, resp *http.Response, d dialect, c *call, st *Stats, tm *timing, start time.Time) error {
	ctx := resp.Request.Context()
	limit := p.cfg.MaxReplyBytes
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		tm.end()
		st.Status = 0
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &Error{Status: http.StatusBadGateway, Code: CodeUpstreamUnreachable, Err: err,
			Message: fmt.Sprintf("the %s upstream's answer was cut off after %s: %v; nothing of it was recorded", d.name(), time.Since(start).Round(time.Millisecond), err)}
	}
	st.ReplyHeld = cap(raw)
	if int64(len(raw)) <= limit {
		tm.end()
		if msg, ok := d.reply(raw); ok {
			st.Reply, st.ReplyTruncated = p.recordReply(ctx, c, msg, replyInfo{bytes: int64(len(raw)), invalidUTF8: !utf8.Valid(raw)})
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(raw)
		return nil
	}
	red := newReducer(newBudget(limit))
	var u utf8Check
	red.Write(raw)
	u.Write(raw)
	total := int64(len(raw))
	st.ReplyHeld = cap(raw) + red.held()
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	pending := raw
	raw = nil
	bufs := [2][]byte{make([]byte, 32<<10), make([]byte, 32<<10)}
	for i := 0; ; i ^= 1 {
		// pending is raw or the other buffer: this one is free.
		buf := bufs[i]
		n, err := resp.Body.Read(buf)
		if n > 0 {
			red.Write(buf[:n])
			u.Write(buf[:n])
			total += int64(n)
			if _, werr := w.Write(pending); werr != nil {
				tm.end()
				st.Cut = true // the client went away
				return nil
			}
			_ = rc.Flush()
			pending = buf[:n]
			st.ReplyHeld = max(st.ReplyHeld, red.held()+len(pending))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			// The upstream cut the answer: relay what came, record
			// nothing.
			tm.end()
			_, _ = w.Write(pending)
			st.Cut = true
			return nil
		}
	}
	tm.end()
	if doc, ok := red.Result(); ok {
		if msg, ok := d.reply(doc); ok {
			st.Reply, st.ReplyTruncated = p.recordReply(ctx, c, msg, replyInfo{truncated: true, bytes: total, invalidUTF8: u.Invalid()})
		}
	}
	if _, err := w.Write(pending); err != nil {
		st.Cut = true
	}
	return nil
}

// redirected refuses an upstream's redirect. The proxy sends the provider
// key and the request only to the configured upstream. A redirect, even to
// the same host, is neither followed nor relayed, since a client following
// it would send its own credentials there. The call fails with 502
// upstream_redirect. Its cause names the target; the server logs the cause
// and never sends it.
func redirected(d dialect, resp *http.Response) error {
	loc := resp.Header.Get("Location")
	return &Error{Status: http.StatusBadGateway, Code: CodeUpstreamRedirect,
		Err: fmt.Errorf("the %s upstream %s answered %s, redirecting to %q", d.name(), resp.Request.URL.Redacted(), resp.Status, loc),
		Message: fmt.Sprintf("the %s upstream answered %s, a redirect: the proxy follows no redirects, so that the request and the provider key reach only the configured upstream; "+
			"configure the provider's final URL with %s", d.name(), resp.Status, d.flag())}
}

// copyBody relays a body as it arrives, and reports whether all of it
// was (the upstream ended it, and the client took it).
func (p *Proxy) copyBody(w http.ResponseWriter, body io.Reader, tm *timing) bool {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if err != nil {
			tm.end()
		}
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				tm.end()
				return false
			}
			_ = rc.Flush()
		}
		if err != nil {
			return err == io.EOF
		}
	}
}

// replyInfo is what the proxy knows of a reply it records, besides the
// message. It says whether the reply was streamed and whether it was cut
// short (truncated: the budget, a missed event). It gives its size as the
// upstream sent it, and whether it held bytes that are not UTF-8.
type replyInfo struct {
	stream, truncated, invalidUTF8 bool
	bytes                          int64
}

// recordReply appends the assistant's reply to the session, with the
// record of the call in its metadata. The reply goes right after the
// request's messages if no other writer got in between; the memo of the
// session is then kept up to date. Otherwise it goes after what they
// wrote. A reply larger than a step may be is cut to fit (fitStep). It
// does not fail the answer, which the client is already getting: a failure
// is logged. It reports whether the reply was recorded, and whether it was
// cut short.
func (p *Proxy) recordReply(ctx context.Context, c *call, msg agentmem.Message, ri replyInfo) (recorded, truncated bool) {
	md := make(map[string]string, len(c.meta)+4)
	for k, v := range c.meta {
		md[k] = v
	}
	if ri.stream {
		md[MetaStream] = "true"
	}
	if ri.invalidUTF8 {
		md[MetaReplyInvalidUTF8] = "true"
	}
	// Measured with the marks of a cut, which it may need.
	md[MetaReplyTruncated], md[MetaReplyBytes] = "true", strconv.FormatInt(ri.bytes, 10)
	msg.Metadata = md
	cut, err := fitStep(&msg)
	if err != nil {
		p.memos.put(c.key, nil)
		p.log.Error("proxy: recording the reply failed", "tenant", c.key.Tenant, "session", c.key.ID, "err", err)
		return false, false
	}
	truncated = ri.truncated || cut
	if !truncated {
		delete(md, MetaReplyTruncated)
		delete(md, MetaReplyBytes)
	}
	// The client's cancellation must not lose a reply the upstream
	// finished.
	ctx = context.WithoutCancel(ctx)
	req := sessions.MessagesRequest{Tenant: c.key.Tenant, SessionID: c.key.ID, Messages: []agentmem.Message{msg}, ExpectedLastSeq: &c.seq}
	resp, err := p.svc.AppendMessages(ctx, req)
	if errors.Is(err, agentmem.ErrConflict) {
		p.memos.put(c.key, nil)
		req.ExpectedLastSeq = nil
		resp, err = p.svc.AppendMessages(ctx, req)
	}
	if err != nil {
		p.memos.put(c.key, nil)
		p.log.Error("proxy: recording the reply failed", "tenant", c.key.Tenant, "session", c.key.ID, "err", err)
		return false, truncated
	}
	if truncated {
		p.log.Info("proxy: a reply larger than the proxy holds was recorded cut short", "tenant", c.key.Tenant, "session", c.key.ID,
			"bytes", ri.bytes, "max_reply_bytes", p.cfg.MaxReplyBytes)
	}
	p.replied(c.key, c.seq, resp.LastSeq, msg)
	return true, truncated
}
