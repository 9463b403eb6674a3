package inspector

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/agentmem/agentmem/store"
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
	// History is set when the source keeps each fact's history
	// (FactHistorySource): every row links to it.
	History bool
}

// factRow is one fact on the facts page.
type factRow struct {
	Index      int
	ID         string
	Text       string
	Base       string
	Current    string
	CurrentBar string
	Created    string
	Reinforced string
	Seen       int // times seen again (FactView.Reinforcements)
	// Superseded is set when a newer fact replaced this one. SupersededBy
	// names or quotes the fact that replaced it, and SupersededURL links to
	// its row when it is a fact of the page. SupersededAt is when it was
	// replaced.
	Superseded      bool
	SupersededBy    string
	SupersededURL   string
	SupersededIndex int
	SupersededAt    string
	// Valid is when the fact held in the world (validity); empty when
	// the source does not know.
	Valid string
	// HistoryURL links to the fact's history, when the source keeps it.
	HistoryURL string
	Class      string
	Spark      *chart
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
	_, d.History = in.cfg.Facts.(FactHistorySource)
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

// factsView fills d with the facts. Active ones come first, by current
// confidence, highest first, on the overview chart and each with its
// sparkline. Superseded ones come after them.
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
	// A fact's row is its number on the page. A superseded fact links to the
	// row of the fact that replaced it, when the page has it.
	all := slices.Concat(active, old)
	index := map[string]int{}
	for i, f := range all {
		if _, dup := index[f.ID]; f.ID != "" && !dup {
			index[f.ID] = i + 1
		}
	}
	row := func(i int, f FactView, class string) factRow {
		cur := effective(f, now)
		r := factRow{
			Index: i + 1, ID: f.ID, Text: cutBytes(f.Text, MaxShownText),
			Base:       confidence(f.Confidence),
			Current:    strconv.FormatFloat(cur, 'f', 2, 64),
			CurrentBar: barWidth(int(cur*1000+0.5), 1000),
			Created:    formatTime(f.CreatedAt), Reinforced: formatTime(f.ReinforcedAt), Seen: f.Reinforcements,
			Superseded: f.Superseded, SupersededBy: cutBytes(f.SupersededBy, MaxShownText), SupersededAt: formatTime(f.SupersededAt),
			Valid: validity(f.ValidFrom, f.ValidTo), Class: class,
			Spark: newChart([]FactView{f}, []string{class}, ts, sparkW, sparkH, false),
		}
		if n, ok := index[f.SupersededBy]; ok && n != i+1 {
			r.SupersededURL, r.SupersededIndex = "#fact-"+strconv.Itoa(n), n
			r.SupersededBy = cutBytes(all[n-1].Text, MaxShownText)
		}
		if d.History && f.ID != "" {
			r.HistoryURL = factHistoryURL(d.User, f.ID)
		}
		return r
	}
	for i, f := range active {
		d.Facts = append(d.Facts, row(i, f, classes[i]))
	}
	for i, f := range old {
		d.Superseded = append(d.Superseded, row(len(active)+i, f, "superseded"))
	}
}

// validity says when a fact held in the world. It is "since FROM" while it
// holds and "FROM – TO" once it ended. It is "never held" when it ended
// as it began, superseded before it became true. It is "" when the source
// does not know.
func validity(from, to time.Time) string {
	switch {
	case from.IsZero():
		return ""
	case to.IsZero():
		return "since " + formatTime(from)
	case to.Equal(from):
		return "never held: superseded before it began, " + formatTime(from)
	}
	return formatTime(from) + " – " + formatTime(to)
}

// factsURL links to a user's facts.
func factsURL(user string) string { return "/facts?" + url.Values{"user": {user}}.Encode() }

// factHistoryURL links to the history of a user's fact.
func factHistoryURL(user, id string) string {
	return "/facts/history?" + url.Values{"user": {user}, "id": {id}}.Encode()
}

// MaxFactChangesShown bounds the changes of a fact its history page lists.
// It lists the newest ones, with a note saying how many older ones it
// leaves out.
const MaxFactChangesShown = 200

// factHistoryData is the page of a fact's history.
type factHistoryData struct {
	Configured bool
	// Kept is set when the facts source keeps histories.
	Kept     bool
	User, ID string
	FactsURL string
	// Fact is the fact as the facts page shows it; nil when the user's
	// facts no longer have it (it was forgotten).
	Fact *factRow
	// Chain is the supersession chain the fact is in, oldest first: the
	// facts it replaced, itself, and those that replaced it.
	Chain []chainRow
	// Changes are the fact's changes, newest first; Older counts those
	// before them, not listed.
	Changes []factChangeRow
	Older   int
}

// chainRow is a fact of a supersession chain.
type chainRow struct {
	Text, Valid, Created, URL string
	This, Superseded          bool
}

// factChangeRow is one change of a fact.
type factChangeRow struct {
	Action, By, Reason, At string
	// SuccessorURL is the history of the fact that superseded this one.
	Successor, SuccessorURL string
	// Text is what the fact said after the change, or before it when the
	// change keeps nothing after. Diff is set instead when the change
	// altered it.
	Text *shownText
	Diff *diffView
	// Confidence and Valid are what the change made them, and what they
	// were when it changed them.
	Confidence, Valid *transition
}

// transition is a value a change set: what it was (empty when the change
// left it as it was) and what it is after.
type transition struct{ Was, Now string }

// changed returns the transition from a to b.
func changed(a, b string) *transition {
	if a == b {
		return &transition{Now: a}
	}
	return &transition{Was: cmp.Or(a, "unknown"), Now: cmp.Or(b, "unknown")}
}

// factHistory serves a fact's history: GET /facts/history?user=&id=.
func (in *Inspector) factHistory(w http.ResponseWriter, r *http.Request) {
	tenant, ok := in.tenant(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	user, err := parseUser(q)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	id := q.Get("id")
	switch {
	case user == "":
		err = invalid("user", "is required")
	case id == "":
		err = invalid("id", "is required")
	default:
		err = textParam("id", id, store.MaxFieldBytes)
	}
	if err != nil {
		in.fail(w, r, err)
		return
	}
	d := &factHistoryData{Configured: in.cfg.Facts != nil, User: user, ID: id, FactsURL: factsURL(user)}
	src, ok := in.cfg.Facts.(FactHistorySource)
	d.Kept = ok
	if ok {
		if err := in.factHistoryView(r.Context(), d, src, tenant); err != nil {
			in.fail(w, r, err)
			return
		}
	}
	in.show(w, r, "facthistory", page{Title: "History of a fact of " + user, Nav: "facts", Tenant: tenant, Data: d})
}

// factHistoryView fills d with the fact, its supersession chain and its
// changes.
func (in *Inspector) factHistoryView(ctx context.Context, d *factHistoryData, src FactHistorySource, tenant string) error {
	changes, err := src.Changes(ctx, tenant, d.User, d.ID)
	if err != nil {
		if isNotFound(err) {
			return notFound("No such fact.")
		}
		return err
	}
	list, err := src.List(ctx, tenant, d.User)
	if err != nil {
		return err
	}
	byID := make(map[string]FactView, len(list))
	pred := make(map[string]string, len(list))
	for _, f := range list {
		byID[f.ID] = f
		if f.SupersededBy != "" {
			pred[f.SupersededBy] = f.ID
		}
	}
	if f, ok := byID[d.ID]; ok {
		now := in.cfg.Clock()
		fd := &factsData{User: d.User, History: true}
		in.factsView(fd, []FactView{f}, now)
		d.Fact = &slices.Concat(fd.Facts, fd.Superseded)[0]
		// The chain: back through the facts it replaced, forward
		// through those that replaced it, each once.
		seen := map[string]bool{d.ID: true}
		var back []FactView
		for p, ok := pred[d.ID]; ok && !seen[p]; p, ok = pred[p] {
			seen[p] = true
			back = append(back, byID[p])
		}
		slices.Reverse(back)
		chain := append(back, f)
		for next := f.SupersededBy; next != "" && !seen[next]; {
			g, ok := byID[next]
			if !ok {
				break
			}
			seen[next] = true
			chain = append(chain, g)
			next = g.SupersededBy
		}
		if len(chain) > 1 {
			for _, g := range chain {
				d.Chain = append(d.Chain, chainRow{Text: cutBytes(g.Text, MaxShownText), Valid: validity(g.ValidFrom, g.ValidTo),
					Created: formatTime(g.CreatedAt), URL: factHistoryURL(d.User, g.ID), This: g.ID == d.ID, Superseded: g.Superseded})
			}
		}
	}
	if n := len(changes) - MaxFactChangesShown; n > 0 {
		d.Older, changes = n, changes[n:]
	}
	for _, c := range slices.Backward(changes) {
		row := factChangeRow{Action: c.Action, By: c.By, Reason: cutBytes(c.Reason, MaxShownText), At: formatTime(c.At), Successor: c.Successor}
		if c.Successor != "" {
			row.SuccessorURL = factHistoryURL(d.User, c.Successor)
			if g, ok := byID[c.Successor]; ok {
				row.Successor = cutBytes(g.Text, MaxShownText)
			}
		}
		before, after := c.Before, c.After
		switch {
		case before != nil && after != nil:
			if before.Text != after.Text {
				diff := newDiffView(before.Text, after.Text)
				row.Diff = &diff
			} else {
				t := clip(after.Text, MaxShownText)
				row.Text = &t
			}
			row.Confidence = changed(confidence(before.Confidence), confidence(after.Confidence))
			row.Valid = changed(validity(before.ValidFrom, before.ValidTo), validity(after.ValidFrom, after.ValidTo))
		case after != nil || before != nil:
			st := cmp.Or(after, before)
			t := clip(st.Text, MaxShownText)
			row.Text = &t
			row.Confidence, row.Valid = &transition{Now: confidence(st.Confidence)}, &transition{Now: validity(st.ValidFrom, st.ValidTo)}
		}
		d.Changes = append(d.Changes, row)
	}
	return nil
}

// confidence formats a confidence as the pages do.
func confidence(c float64) string { return strconv.FormatFloat(min(1, max(0, c)), 'f', 2, 64) }
