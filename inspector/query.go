package inspector

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// Limits on query parameters.
const (
	// MaxBudget bounds the budget parameter.
	MaxBudget = 10_000_000
	// MaxQueryBytes bounds the recall query.
	MaxQueryBytes = 1000
	// MaxK bounds the number of recall hits asked for.
	MaxK = 100
	// DefaultK is the number of recall hits asked for when k is not given.
	DefaultK = 10
	// MaxTimelinePage bounds the log entries the session page shows at once.
	MaxTimelinePage = 1000
)

// view is how steps are rendered and counted. It is the format, tokenizer
// and budget of the "what the model saw" page, which the session page
// carries along in its links.
type view struct {
	Format    string // a render format name
	Tokenizer string // a tokenizer name
	Budget    int    // 0: no limit
	Truncate  bool   // ContextOptions.TruncateToFill
}

// values returns the query parameters that give v, leaving out defaults.
func (v view) values(def view) url.Values {
	q := url.Values{}
	if v.Format != def.Format {
		q.Set("format", v.Format)
	}
	if v.Tokenizer != def.Tokenizer {
		q.Set("tokenizer", v.Tokenizer)
	}
	if v.Budget != 0 {
		q.Set("budget", strconv.Itoa(v.Budget))
	}
	if v.Truncate {
		q.Set("truncate", "1")
	}
	return q
}

// parseView reads format, tokenizer, budget and truncate; missing ones
// take their values from def.
func parseView(q url.Values, def view) (view, error) {
	v := def
	if s := q.Get("format"); s != "" {
		if _, err := render.ByName(s); err != nil {
			return view{}, invalid("format", "unknown format %.40q (known: %s)", s, strings.Join(render.Names(), ", "))
		}
		v.Format = s
	}
	if s := q.Get("tokenizer"); s != "" {
		if _, err := tokenizer.Get(s); err != nil {
			return view{}, invalid("tokenizer", "unknown tokenizer %.40q (known: %s)", s, strings.Join(tokenizer.Names(), ", "))
		}
		v.Tokenizer = s
	}
	if _, ok := q["budget"]; ok {
		n, err := intParam(q, "budget", 0, MaxBudget)
		if err != nil {
			return view{}, err
		}
		v.Budget = n
	}
	if _, ok := q["truncate"]; ok {
		b, err := boolParam(q, "truncate")
		if err != nil {
			return view{}, err
		}
		v.Truncate = b
	}
	return v, nil
}

// listQuery is the sessions page's query.
type listQuery struct {
	User, Agent string
	Parent      string // lists the branches of this session
	Page        string // a store page token
	Size        int
}

func parseList(q url.Values, defSize int) (listQuery, error) {
	l := listQuery{User: q.Get("user"), Agent: q.Get("agent"), Parent: q.Get("parent"), Page: q.Get("page"), Size: defSize}
	for _, f := range []struct{ name, v string }{{"user", l.User}, {"agent", l.Agent}} {
		if err := textParam(f.name, f.v, store.MaxFieldBytes); err != nil {
			return listQuery{}, err
		}
	}
	if l.Parent != "" && store.ValidateID(l.Parent) != nil {
		return listQuery{}, invalid("parent", "is not a session ID")
	}
	if l.Page != "" {
		if _, err := store.DecodePageToken(l.Page); err != nil {
			return listQuery{}, invalid("page", "is not a page token of this inspector")
		}
	}
	if q.Get("size") != "" {
		n, err := intParam(q, "size", 1, store.MaxPageSize)
		if err != nil {
			return listQuery{}, err
		}
		l.Size = n
	}
	return l, nil
}

// values returns the query parameters of l, without the page token.
func (l listQuery) values(defSize int) url.Values {
	q := url.Values{}
	if l.User != "" {
		q.Set("user", l.User)
	}
	if l.Agent != "" {
		q.Set("agent", l.Agent)
	}
	if l.Parent != "" {
		q.Set("parent", l.Parent)
	}
	if l.Size != defSize {
		q.Set("size", strconv.Itoa(l.Size))
	}
	return q
}

// parseAt reads the at parameter of the context page: a step number, or
// 0 when it is absent (the next call).
func parseAt(q url.Values) (int64, error) {
	s := q.Get("at")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != s {
		return 0, invalid("at", "must be a step number (a whole number from 1)")
	}
	return n, nil
}

// maxContextPage bounds the page parameter of the context page (a
// context of MaxBudget tokens has fewer messages than this many pages of
// ContextPage).
const maxContextPage = MaxBudget / ContextPage

// parseContextPages reads the page parameters of the context page. page is
// the page of the messages (1 when absent). before is the sequence number
// the log's page lists the entries before (0 when absent: the newest).
func parseContextPages(q url.Values) (page int, before int64, err error) {
	page = 1
	if q.Get("page") != "" {
		if page, err = intParam(q, "page", 1, maxContextPage); err != nil {
			return 0, 0, err
		}
	}
	if s := q.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 || strconv.FormatInt(n, 10) != s {
			return 0, 0, invalid("before", "must be a sequence number (a whole number from 1)")
		}
		before = n
	}
	return page, before, nil
}

// parseAfter reads the after parameter of the session page.
func parseAfter(q url.Values) (int64, error) {
	s := q.Get("after")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != s {
		return 0, invalid("after", "must be a sequence number (a whole number from 0)")
	}
	return n, nil
}

// recallQuery is the recall page's query.
type recallQuery struct {
	Q     string
	K     int
	Scope string // "session:ID", "user:ID", "agent:ID" or ""
}

func parseRecall(q url.Values) (recallQuery, error) {
	r := recallQuery{Q: strings.TrimSpace(q.Get("q")), K: DefaultK, Scope: strings.TrimSpace(q.Get("scope"))}
	if err := textParam("q", r.Q, MaxQueryBytes); err != nil {
		return recallQuery{}, err
	}
	if err := textParam("scope", r.Scope, MaxQueryBytes); err != nil {
		return recallQuery{}, err
	}
	if _, err := recall.ParseScope(r.Scope); err != nil {
		return recallQuery{}, err
	}
	if q.Get("k") != "" {
		n, err := intParam(q, "k", 1, MaxK)
		if err != nil {
			return recallQuery{}, err
		}
		r.K = n
	}
	return r, nil
}

// parseUser reads the facts page's user parameter.
func parseUser(q url.Values) (string, error) {
	u := q.Get("user")
	return u, textParam("user", u, store.MaxFieldBytes)
}

func intParam(q url.Values, name string, lo, hi int) (int, error) {
	s := q.Get(name)
	n, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(n) != s {
		return 0, invalid(name, "must be a whole number from %d to %d", lo, hi)
	}
	if n < lo || n > hi {
		return 0, invalid(name, "is %d; it must be from %d to %d", n, lo, hi)
	}
	return n, nil
}

func boolParam(q url.Values, name string) (bool, error) {
	switch strings.ToLower(q.Get(name)) {
	case "", "0", "false", "off", "no":
		return false, nil
	case "1", "true", "on", "yes":
		return true, nil
	}
	return false, invalid(name, "must be 1 or 0")
}

// textParam checks a free-text parameter: valid UTF-8 without NUL, at most
// maxBytes bytes.
func textParam(name, v string, maxBytes int) error {
	switch {
	case !utf8.ValidString(v):
		return invalid(name, "is not valid UTF-8")
	case len(v) > maxBytes:
		return invalid(name, "is %d bytes long (at most %d)", len(v), maxBytes)
	case strings.IndexByte(v, 0) >= 0:
		return invalid(name, "contains a NUL byte")
	}
	return nil
}

func invalid(field, format string, args ...any) error {
	return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
