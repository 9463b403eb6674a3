package inspector

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// Chart sizes, in CSS pixels.
const (
	overviewW, overviewH = 760, 180
	sparkW, sparkH       = 160, 28
	// maxOverviewLines bounds the facts the overview chart draws.
	maxOverviewLines = 12
)

// factsData is the facts page's data.
type factsData struct {
	Configured bool
	User       string
	Now        string
	Overview   *chart
	Facts      []factRow
	Superseded []factRow
	Omitted    int // active facts not drawn on the overview
}

// factRow is one fact on the facts page.
type factRow struct {
	Index        int
	ID           string
	Text         string
	Base         string
	Current      string
	CurrentBar   string
	Created      string
	Reinforced   string
	Seen         int // times seen again (FactView.Reinforcements)
	SupersededBy string
	Valid        string // when the fact held, when that says more than its creation
	Class        string
	Spark        *chart
}

// facts serves a user's facts: GET /facts?user=.
func (in *Inspector) facts(w http.ResponseWriter, r *http.Request) {
	tenant, ok := in.tenant(w, r)
	if !ok {
		return
	}
	user, err := parseUser(r.URL.Query())
	if err != nil {
		in.fail(w, r, err)
		return
	}
	now := in.cfg.Clock()
	d := &factsData{Configured: in.cfg.Facts != nil, User: user, Now: formatTime(now)}
	if d.Configured && user != "" {
		list, err := in.cfg.Facts.List(r.Context(), tenant, user)
		if err != nil {
			in.fail(w, r, err)
			return
		}
		in.factsView(d, list, now)
	}
	title := "Facts"
	if user != "" {
		title = "Facts of " + user
	}
	in.show(w, r, "facts", page{Title: title, Nav: "facts", Tenant: tenant, Data: d})
}

// factsView fills d with the facts: active ones by current confidence,
// highest first, on the overview chart and each with its sparkline;
// superseded ones after them.
func (in *Inspector) factsView(d *factsData, list []FactView, now time.Time) {
	var active, old []FactView
	for _, f := range list {
		if f.Superseded {
			old = append(old, f)
		} else {
			active = append(active, f)
		}
	}
	byCurrent := func(a, b FactView) int {
		return cmp.Or(cmp.Compare(effective(b, now), effective(a, now)), a.CreatedAt.Compare(b.CreatedAt))
	}
	slices.SortStableFunc(active, byCurrent)
	slices.SortStableFunc(old, byCurrent)
	ts := newTimeScale(list, now)
	classes := make([]string, len(active))
	for i := range active {
		classes[i] = "c" + strconv.Itoa(i%chartColors)
	}
	shown := active[:min(len(active), maxOverviewLines)]
	if len(shown) > 0 {
		d.Overview = newChart(shown, classes, ts, overviewW, overviewH, true)
	}
	d.Omitted = len(active) - len(shown)
	row := func(i int, f FactView, class string) factRow {
		cur := effective(f, now)
		return factRow{
			Index: i + 1, ID: f.ID, Text: f.Text,
			Base:       strconv.FormatFloat(min(1, max(0, f.Confidence)), 'f', 2, 64),
			Current:    strconv.FormatFloat(cur, 'f', 2, 64),
			CurrentBar: barWidth(int(cur*1000+0.5), 1000),
			Created:    formatTime(f.CreatedAt), Reinforced: formatTime(f.ReinforcedAt), Seen: f.Reinforcements,
			SupersededBy: f.SupersededBy, Valid: validity(f), Class: class,
			Spark: newChart([]FactView{f}, []string{class}, ts, sparkW, sparkH, false),
		}
	}
	for i, f := range active {
		d.Facts = append(d.Facts, row(i, f, classes[i]))
	}
	for i, f := range old {
		d.Superseded = append(d.Superseded, row(len(active)+i, f, "superseded"))
	}
}

// validity says when f held in the world: "held FROM – TO" once it ended,
// "holds since FROM" when it began at another time than it was recorded,
// else nothing (it holds since it was recorded, as the created column
// says).
func validity(f FactView) string {
	switch {
	case f.ValidFrom.IsZero():
		return ""
	case !f.ValidTo.IsZero():
		return "held " + formatTime(f.ValidFrom) + " – " + formatTime(f.ValidTo)
	case !f.ValidFrom.Equal(f.CreatedAt):
		return "holds since " + formatTime(f.ValidFrom)
	}
	return ""
}

// factsURL links to a user's facts.
func factsURL(user string) string { return "/facts?" + url.Values{"user": {user}}.Encode() }
