package inspector

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// sessionsData is the sessions page's data.
type sessionsData struct {
	Query    listQuery
	Sessions []sessionHead
	// Damaged are the sessions of the page whose stored record does not
	// decode: named, with why, rather than failing the page.
	Damaged  []damagedRow
	NextURL  string
	FirstURL string // set when this is not the first page
}

// damagedRow is a damaged record a page names.
type damagedRow struct {
	ID, Error string
}

// sessions serves the sessions list: GET /?user=&agent=&parent=&size=&page=.
func (in *Inspector) sessions(w http.ResponseWriter, r *http.Request) {
	tenant, ok := in.tenant(w, r)
	if !ok {
		return
	}
	l, err := parseList(r.URL.Query(), in.cfg.PageSize)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	resp, err := in.svc.List(r.Context(), store.ListRequest{Tenant: tenant, UserID: l.User, Agent: l.Agent, ParentID: l.Parent, PageSize: l.Size, PageToken: l.Page})
	if err != nil {
		in.fail(w, r, err)
		return
	}
	next := resp.NextPageToken
	d := &sessionsData{Query: l}
	for _, s := range resp.Sessions {
		d.Sessions = append(d.Sessions, newSessionHead(s))
	}
	for _, dmg := range resp.Damaged {
		d.Damaged = append(d.Damaged, damagedRow{ID: dmg.ID, Error: dmg.Err.Error()})
	}
	q := l.values(in.cfg.PageSize)
	if next != "" {
		nq := l.values(in.cfg.PageSize)
		nq.Set("page", next)
		d.NextURL = withQuery("/", nq)
	}
	if l.Page != "" {
		d.FirstURL = withQuery("/", q)
	}
	in.show(w, r, "sessions", page{Title: "Sessions", Nav: "sessions", Tenant: tenant, Data: d})
}

// getSession returns the tenant's session id, or an error the error page
// shows as 404. A session of another tenant does not exist for this one.
func (in *Inspector) getSession(ctx context.Context, tenant, id string) (*store.Session, error) {
	if store.ValidateID(id) != nil {
		return nil, notFound("No such session.")
	}
	s, err := in.svc.Get(ctx, tenant, id)
	if err != nil {
		if isNotFound(err) {
			return nil, notFound("No such session.")
		}
		return nil, err
	}
	return s, nil
}

// timelineData is the session page's data.
type timelineData struct {
	S          sessionHead
	View       view
	Formats    []string
	Tokenizers []string
	// Entries are the page's rows: its steps, compactions and amendments of
	// steps on earlier pages. An amendment of a step of the page is in that
	// step's row. EntryCount counts the log entries they show.
	Entries    []entryRow
	EntryCount int
	// PageTokens sums the tokens of the steps of this page.
	PageTokens int
	// Branches are the session's branches (on the first page), at most
	// MaxBranchesShown of them; AllBranchesURL lists every one when there
	// are more.
	Branches       []branchRow
	AllBranchesURL string
	// Blocks are the memory blocks the session's contexts show, its
	// user's and its own (on the first page, with a blocks source).
	Blocks []blockGroup
	// Sizes charts the context of each model call of the session, on the
	// first page. SizesNote says why there is none when the log is too long
	// for it.
	Sizes     *sizeChart
	SizesNote string
	// Full is set when the page ended before TimelinePage entries because
	// their messages reached MaxTimelineBytes.
	Full        bool
	MaxBytes    string // MaxTimelineBytes, for people
	NextURL     string
	FirstURL    string
	NextCallURL string
}

// entryRow is one row of the session page. It is a step (with the
// amendments that completed it), a compaction, an amendment of a step on
// an earlier page, or a branch's fork point (Fork).
type entryRow struct {
	Seq int64
	// From is the session a branch inherited the entry from ("" for the
	// session's own entries), and FromURL its page.
	From, FromURL string
	Fork          *forkView
	Time          string
	Compaction    *compactionView
	// Amendment says what an amendment of steps on earlier pages did.
	Amendment string
	Kind      string
	Preview   string
	Tools     []string
	Covers    string
	Tokens    int
	Bar       string // the token bar's width in percent
	// Arrived are the amendments of this page that completed the step;
	// Awaiting is set when it still awaits results at the page's end.
	Arrived    []arrivalView
	Awaiting   bool
	ContextURL string
	Messages   []messageView

	time time.Time // the entry's time
}

// forkView is the fork point of a branch, drawn after the last entry it
// inherited.
type forkView struct {
	Parent, ParentURL string
	Seq               int64
}

// branchRow is a branch on its parent's page.
type branchRow struct {
	ID, URL string
	ForkSeq int64
	LastSeq int64
	Created string
}

// MaxBranchesShown bounds the branches a session's page lists; a link
// then leads to the sessions list of all of them.
const MaxBranchesShown = 20

// lineage tells where the entries of a branch's log come from. Those up to
// the fork point were inherited, from the parent or, through it, from an
// older session whose log holds them.
type lineage struct {
	id, parent string
	fork       int64
	segs       []store.Segment
}

// lineageOf returns sess's lineage: from the store's segments when it
// can tell them (store.Segmenter), else every inherited entry is the
// parent's.
func (in *Inspector) lineageOf(ctx context.Context, sess *store.Session) (lineage, error) {
	l := lineage{id: sess.ID, parent: sess.ParentID, fork: sess.ForkSeq}
	if sess.ParentID == "" {
		return l, nil
	}
	if in.cfg.Store.Supports(store.CanSegment) {
		segs, err := in.cfg.Store.Segments(ctx, sess.Tenant, sess.ID)
		if err != nil {
			return l, err
		}
		l.segs = segs
	}
	return l, nil
}

// from returns the session entry seq was inherited from, or "" for the
// branch's own entries. An inherited entry the branch's log holds itself
// (its parent was deleted, which hands the history to its branches) is
// the parent's.
func (l lineage) from(seq int64) string {
	if l.parent == "" || seq > l.fork {
		return ""
	}
	for _, s := range l.segs {
		if s.Session != l.id && seq > s.After && (s.Through == 0 || seq <= s.Through) {
			return s.Session
		}
	}
	return l.parent
}

// branches lists sess's branches, newest first, into the first page's
// data. A session created after another of the same ID was deleted is not
// the parent of that one's branches, which keep its ID as where they came
// from. So branches created before sess are left out.
func (in *Inspector) branches(ctx context.Context, sess *store.Session, d *timelineData) error {
	resp, err := in.svc.List(ctx, store.ListRequest{Tenant: sess.Tenant, ParentID: sess.ID, PageSize: MaxBranchesShown})
	if err != nil {
		return err
	}
	for _, b := range resp.Sessions {
		if b.CreatedAt.Before(sess.CreatedAt) {
			continue
		}
		d.Branches = append(d.Branches, branchRow{ID: b.ID, URL: sessionURL(b.ID), ForkSeq: b.ForkSeq, LastSeq: b.LastSeq, Created: formatTime(b.CreatedAt)})
	}
	if resp.NextPageToken != "" {
		d.AllBranchesURL = "/?" + url.Values{"parent": {sess.ID}}.Encode()
	}
	return nil
}

// sessionView starts a handler of a session's page. It returns the
// caller's tenant, the session named by the path (another tenant's is not
// found), the query and the view it asks for. On failure it has answered,
// and ok is false.
func (in *Inspector) sessionView(w http.ResponseWriter, r *http.Request) (sess *store.Session, q url.Values, v view, ok bool) {
	tenant, ok := in.tenant(w, r)
	if !ok {
		return nil, nil, view{}, false
	}
	sess, err := in.getSession(r.Context(), tenant, r.PathValue("id"))
	if err != nil {
		in.fail(w, r, err)
		return nil, nil, view{}, false
	}
	q = r.URL.Query()
	if v, err = parseView(q, in.def); err != nil {
		in.fail(w, r, err)
		return nil, nil, view{}, false
	}
	return sess, q, v, true
}

// session serves a session's log: GET /sessions/{id}?after=&format=&tokenizer=.
func (in *Inspector) session(w http.ResponseWriter, r *http.Request) {
	sess, q, v, ok := in.sessionView(w, r)
	if !ok {
		return
	}
	after, err := parseAfter(q)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	// One more than a page tells whether there is a next page.
	resp, err := in.svc.Read(r.Context(), store.ReadRequest{Tenant: sess.Tenant, SessionID: sess.ID, After: after, Limit: in.cfg.TimelinePage + 1})
	if err != nil {
		in.fail(w, r, err)
		return
	}
	if resp.Session.Tenant != sess.Tenant { // deleted and created again meanwhile
		in.fail(w, r, notFound("No such session."))
		return
	}
	sess = resp.Session
	entries := resp.Entries
	more := len(entries) > in.cfg.TimelinePage
	if more {
		entries = entries[:in.cfg.TimelinePage]
	}
	f, _ := render.ByName(v.Format)
	tc, _ := tokenizer.Get(v.Tokenizer)
	c := newPageCounter(tc) // shared with the chart, which counts these steps again
	vq := v.values(in.def)
	d := &timelineData{
		S: newSessionHead(sess), View: v, Formats: render.Names(), Tokenizers: tokenizer.Names(),
		NextCallURL: withQuery(sessionURL(sess.ID)+"/context", vq), MaxBytes: strconv.Itoa(MaxTimelineBytes>>20) + " MiB",
	}
	// The page ends early once the text of its entries, the steps and
	// the amendments' copies, reaches MaxTimelineBytes.
	size := 0
	for i, e := range entries {
		if size >= MaxTimelineBytes {
			entries, more, d.Full = entries[:i], true, true
			break
		}
		switch {
		case e.Step != nil:
			size += messagesBytes(f.StepMessages(e.Step, agentmem.RenderOptions{}))
		case e.Compaction != nil && e.Compaction.Amend:
			for _, r := range e.Compaction.Replaced {
				size += messagesBytes(f.StepMessages(r, agentmem.RenderOptions{}))
			}
		}
	}
	d.EntryCount = len(entries)
	lin, err := in.lineageOf(r.Context(), sess)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	vs := newVersions()
	rowOf := map[int64]int{} // a step's seq -> its row
	// The fork point is drawn after the branch's last inherited entry,
	// on the page that holds it.
	fork := func() {
		d.Entries = append(d.Entries, entryRow{Seq: lin.fork, Fork: &forkView{Parent: lin.parent, ParentURL: sessionURL(lin.parent), Seq: lin.fork}})
	}
	for i, e := range entries {
		if i > 0 && lin.parent != "" && entries[i-1].Seq == lin.fork {
			fork()
		}
		row := entryRow{Seq: e.Seq, Time: formatTime(e.Time), Kind: string(e.Kind), time: e.Time}
		if row.From = lin.from(e.Seq); row.From != "" {
			row.FromURL = sessionURL(row.From)
		}
		switch {
		case e.Kind == store.CompactionEntry && e.Compaction != nil && e.Compaction.Amend:
			var off []string
			anchored := false
			for _, r := range e.Compaction.Replaced {
				n := int64(r.Info().Number)
				prev, known := vs.amend(r)
				k, onPage := rowOf[n]
				if !known || !onPage {
					off = append(off, describeOffPage(n, r))
					continue
				}
				step := &d.Entries[k]
				step.Arrived = append(step.Arrived, arrivalView{Seq: e.Seq, Anchor: !anchored,
					Text: arrivalText(describeAmendment(prev, r), step.time, e.Time, step.From != "" && row.From == "")})
				anchored = true
			}
			if len(off) == 0 {
				continue
			}
			row.Kind, row.Amendment = "amendment", strings.Join(off, "; ")
		case e.Kind == store.CompactionEntry && e.Compaction != nil:
			row.Compaction = vs.compact(e.Compaction)
		case e.Step != nil:
			vs.step(e.Seq, e.Step)
			rowOf[e.Seq] = len(d.Entries)
			row.Kind = string(e.Step.Kind())
		}
		d.Entries = append(d.Entries, row)
	}
	if n := len(entries); n > 0 && lin.parent != "" && entries[n-1].Seq == lin.fork {
		fork()
	}
	// Each step's row shows it completed by the amendments of the page:
	// what the model sees.
	for i := range d.Entries {
		row := &d.Entries[i]
		s, ok := vs.shown[row.Seq]
		if !ok || row.Compaction != nil || row.Amendment != "" || row.Fork != nil {
			continue
		}
		msgs, costs, total := stepCost(f, c, s)
		row.Preview = preview(s)
		row.Tools = toolNames(s)
		row.Covers = covers(s)
		row.Tokens = total
		row.Awaiting = agentmem.IsPending(s)
		for k, m := range msgs {
			row.Messages = append(row.Messages, newMessageView(m, costs[k]))
		}
		cq := v.values(in.def)
		cq.Set("at", strconv.FormatInt(row.Seq, 10))
		row.ContextURL = withQuery(sessionURL(sess.ID)+"/context", cq)
		d.PageTokens += total
		row.Bar = tokenBarWidth(row.Tokens)
	}
	if more {
		nq := v.values(in.def)
		nq.Set("after", strconv.FormatInt(entries[len(entries)-1].Seq, 10))
		d.NextURL = withQuery(sessionURL(sess.ID), nq)
	}
	if after > 0 {
		d.FirstURL = withQuery(sessionURL(sess.ID), vq)
	} else if err := in.branches(r.Context(), sess, d); err != nil {
		in.fail(w, r, err)
		return
	} else if err := in.chartSizes(r.Context(), sess, v, c, d); err != nil {
		in.fail(w, r, err)
		return
	} else if d.Blocks, err = in.sessionBlocks(r.Context(), sess); err != nil {
		in.fail(w, r, err)
		return
	}
	in.show(w, r, "session", page{Title: "Session " + sess.ID, Nav: "sessions", Tenant: sess.Tenant, Data: d})
}

// chartSizes draws the context size of every call of the session into the
// first page's data, or says why it cannot. The sizes are counted by the
// page's counter (see newSizeChart).
func (in *Inspector) chartSizes(ctx context.Context, sess *store.Session, v view, c *pageCounter, d *timelineData) error {
	if v.Budget > in.cfg.MaxContextTokens {
		return invalid("budget", "is %d tokens, more than this server's maximum context of %d tokens", v.Budget, in.cfg.MaxContextTokens)
	}
	resp, err := in.svc.Read(ctx, store.ReadRequest{Tenant: sess.Tenant, SessionID: sess.ID, Limit: MaxChartEntries + 1})
	if err != nil {
		return err
	}
	if len(resp.Entries) > MaxChartEntries {
		d.SizesNote = "This session's log has more than " + strconv.Itoa(MaxChartEntries) + " entries: the chart of what each call was sent is not drawn. Each step's page (what the model saw) shows it."
		return nil
	}
	link := func(seq int64) string {
		q := v.values(in.def)
		q.Set("at", strconv.FormatInt(seq, 10))
		return withQuery(sessionURL(sess.ID)+"/context", q)
	}
	d.Sizes, err = newSizeChart(ctx, in.svc, resp.Session, resp.Entries, v, in.fitTo(v), c, link)
	if errors.Is(err, errChartText) {
		d.SizesNote = "This session's log holds more than " + strconv.Itoa(MaxChartBytes>>20) + " MiB of text beyond this page's: the chart of what each call was sent is not drawn. Each step's page (what the model saw) shows it."
		return nil
	}
	return err
}

func isNotFound(err error) bool { return errors.Is(err, agentmem.ErrNotFound) }
