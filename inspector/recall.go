package inspector

import (
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
)

// recallData is the recall page's data.
type recallData struct {
	Configured bool
	Query      recallQuery
	Searched   bool
	Hits       []hitRow
}

// hitRow is one recall hit on the recall page.
type hitRow struct {
	Rank int
	ID   string
	// Text is the hit's text as shown (clip), in segments, those that
	// match a query term marked.
	Text       shownText
	Score      string
	SessionID  string
	SessionURL string
	Seq        int64
	User       string
	UserURL    string
	Time       string
}

// recall serves recall search: GET /recall?q=&k=.
func (in *Inspector) recall(w http.ResponseWriter, r *http.Request) {
	tenant, ok := in.tenant(w, r)
	if !ok {
		return
	}
	rq, err := parseRecall(r.URL.Query())
	if err != nil {
		in.fail(w, r, err)
		return
	}
	d := &recallData{Configured: in.cfg.Recall != nil, Query: rq}
	if d.Configured && rq.Q != "" {
		hits, err := in.cfg.Recall.Search(r.Context(), tenant, rq.Q, rq.Scope, rq.K)
		if err != nil {
			in.fail(w, r, err)
			return
		}
		d.Searched = true
		terms := map[string]bool{}
		for _, t := range recall.Tokenize(rq.Q) {
			terms[t] = true
		}
		for i, h := range hits[:min(len(hits), rq.K)] {
			row := hitRow{
				Rank: i + 1, ID: h.ID, Text: highlightShown(clip(h.Text, MaxShownText), terms), Score: strconv.FormatFloat(h.Score, 'f', 3, 64),
				SessionID: h.SessionID, Seq: h.Seq, User: h.UserID, Time: formatTime(h.Time),
			}
			if h.SessionID != "" && store.ValidateID(h.SessionID) == nil {
				row.SessionURL = sessionURL(h.SessionID)
				if h.Seq > 0 {
					row.SessionURL += "/context?at=" + strconv.FormatInt(h.Seq, 10)
				}
			}
			if h.UserID != "" {
				row.UserURL = factsURL(h.UserID)
			}
			d.Hits = append(d.Hits, row)
		}
	}
	title := "Recall"
	if rq.Q != "" {
		title = "Recall: " + rq.Q
	}
	in.show(w, r, "recall", page{Title: title, Nav: "recall", Tenant: tenant, Data: d})
}

// highlightShown marks the words of a text as shown (clip) that match a
// query term (highlight). The text is cut before it is highlighted, so
// that the work follows what the page shows.
func highlightShown(t shownText, terms map[string]bool) shownText {
	out := shownText{More: t.More}
	for _, s := range t.Segs {
		hs := highlight(s.Text, terms)
		if s.Cut > 0 {
			if len(hs) == 0 {
				hs = append(hs, segment{})
			}
			hs[len(hs)-1].Cut = s.Cut
		}
		out.Segs = append(out.Segs, hs...)
	}
	return out
}

// highlight splits text into segments, marking the words that match a
// query term as recall matches them. It uses the same analysis: lower
// case, stemming, stop words dropped (see recall.Tokenize). So "migrating"
// is marked for the query "migration".
func highlight(text string, terms map[string]bool) []segment {
	var out []segment
	plain := 0 // start of the unmarked run
	for i := 0; i < len(text); {
		j := strings.IndexFunc(text[i:], isWordRune)
		if j < 0 {
			break
		}
		start := i + j
		end := len(text)
		if k := strings.IndexFunc(text[start:], func(r rune) bool { return !isWordRune(r) }); k >= 0 {
			end = start + k
		}
		if t := recall.Tokenize(text[start:end]); len(t) == 1 && terms[t[0]] {
			if plain < start {
				out = append(out, segment{Text: text[plain:start]})
			}
			out = append(out, segment{Text: text[start:end], Mark: true})
			plain = end
		}
		i = end
	}
	if plain < len(text) {
		out = append(out, segment{Text: text[plain:]})
	}
	return out
}

// isWordRune reports whether r is part of a word, as recall.Tokenize splits
// text: letters and digits.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
