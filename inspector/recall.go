package inspector

import (
	"net/http"
	"strconv"

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
	Rank       int
	ID         string
	Text       string
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
		hits, err := in.cfg.Recall.Search(r.Context(), tenant, rq.Q, rq.K)
		if err != nil {
			in.fail(w, r, err)
			return
		}
		d.Searched = true
		for i, h := range hits[:min(len(hits), rq.K)] {
			row := hitRow{
				Rank: i + 1, ID: h.ID, Text: h.Text, Score: strconv.FormatFloat(h.Score, 'f', 3, 64),
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
