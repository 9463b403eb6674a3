package inspector

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// Step statuses on the "what the model saw" page.
const (
	StatusShown      = "shown"      // the step's messages were sent
	StatusTruncated  = "truncated"  // sent with its observations shortened
	StatusSummarized = "summarized" // not sent: a summary stands in for it
	StatusPruned     = "pruned"     // not sent: over the budget, or removed by a compaction
	StatusPending    = "pending"    // not sent: its tool calls await results
)

// MaxWireBytes bounds the request body in wire JSON that the "what the
// model saw" page shows under the messages, which it repeats. A larger one
// is left out, with a note. ContextPage and ContextLogPage bound the
// messages and the log entries it shows.
const MaxWireBytes = 1 << 20

// modelView is what the model saw at one call. It holds the context
// rendered from the working set of a prefix of a session's log, and the
// status of every step of that prefix.
type modelView struct {
	// Context is Memory.Context's result; nil when BudgetErr is set.
	Context *agentmem.Context
	// BudgetErr is set when the pinned steps alone exceed the budget.
	BudgetErr *agentmem.BudgetError
	// Messages are one page of Context's messages (ContextPage, from the
	// MsgFrom'th, counted from 0), with their token counts. When the format
	// keeps one message list per step, they have their steps too. MessageSum
	// is the cost of all of them, and Page and Pages number the page.
	Messages    []messageView
	MsgFrom     int
	MessageSum  int
	Page, Pages int
	// Log is one page of the entries of the prefix, each step with its
	// status. It has ContextLogPage entries, or fewer when their steps hold
	// MaxTimelineBytes of text (LogFull). Hidden counts the older entries it
	// leaves out, and Newer the newer ones.
	Log           []logRow
	Hidden, Newer int
	LogFull       bool
	// Counts are the statuses of every step of the prefix.
	Counts map[string]int
}

// logRow is one log entry with what became of it in the context. It is a
// step, with the amendments that completed it (Arrived), or a compaction.
type logRow struct {
	Seq        int64
	Kind       string
	Status     string // one of the Status constants; "" for a compaction
	Detail     string
	Arrived    []string
	Tokens     int
	Preview    string
	Compaction *compactionView

	step agentmem.Step // the entry's step, completed, until describe
}

// fitTo is the budget a view's context is fitted to: its budget or,
// without one, the inspector's maximum (Config.MaxContextTokens). So only
// the steps that fit are rendered, however long the log.
func (in *Inspector) fitTo(v view) int {
	if v.Budget == 0 {
		return in.cfg.MaxContextTokens
	}
	return v.Budget
}

// buildModelView turns a session's log and the context its working set
// gave into what the page shows. The context is
// sessions.Service.ContextAt's; be is its *agentmem.BudgetError, if the
// pinned steps did not fit. The page shows page (from 1) of the messages
// with their costs, and a status for each entry of the log. Of the log it
// describes one page: the newest entries before seq before (0: the newest
// of all). A page past the messages' last is an *agentmem.InvalidError.
func buildModelView(lc *sessions.LogContext, be *agentmem.BudgetError, page int, before int64) (*modelView, error) {
	f, c, ws, res := lc.Format, lc.Counter, lc.WorkingSet, lc.Context
	mv := &modelView{Counts: map[string]int{}, BudgetErr: be, Page: page, Pages: 1}
	if res != nil {
		mv.Context = res
		mv.Pages = max(1, (len(res.Messages)+ContextPage-1)/ContextPage)
		if page > mv.Pages {
			return nil, invalid("page", "is %d; this context's messages fill %d pages", page, mv.Pages)
		}
		mv.MsgFrom = (page - 1) * ContextPage
		mv.Messages, mv.MessageSum = messageViews(res, ws, f, c, mv.MsgFrom, min(len(res.Messages), mv.MsgFrom+ContextPage))
	} else if page > 1 {
		return nil, invalid("page", "is %d; no messages were sent", page)
	}
	rows := statuses(lc.Entries, ws, res)
	for _, row := range rows {
		if row.Status != "" {
			mv.Counts[row.Status]++
		}
	}
	end := len(rows)
	if before > 0 {
		end, _ = slices.BinarySearchFunc(rows, before, func(r logRow, seq int64) int { return cmp.Compare(r.Seq, seq) })
	}
	// The page of the log, from its newest entry back. Its steps are
	// described (rendered and counted) as the timeline's are, so it ends as
	// a page of the timeline does.
	start, size := end, 0
	for start > 0 && end-start < ContextLogPage {
		if size >= MaxTimelineBytes {
			mv.LogFull = true
			break
		}
		start--
		size += rows[start].describe(f, c)
	}
	mv.Log, mv.Hidden, mv.Newer = rows[start:end], start, len(rows)-end
	return mv, nil
}

// messageViews returns the messages lo to hi of the context with their
// costs, and the cost of all its messages. The format's assembly may keep
// the steps' messages as they were, one list per step, as OpenAI's and the
// observation format do. Each message is then labelled with its step.
func messageViews(res *agentmem.Context, ws []agentmem.Step, f agentmem.Format, c tokenizer.Counter, lo, hi int) ([]messageView, int) {
	byNumber := make(map[int]agentmem.Step, len(ws))
	for _, s := range ws {
		byNumber[s.Info().Number] = s
	}
	counts := make([]int, len(res.Steps))
	for i, n := range res.Steps {
		if s, ok := byNumber[n]; ok {
			counts[i] = len(f.StepMessages(s, agentmem.RenderOptions{}))
		}
	}
	// A final answer that ends the context sends nothing
	// (agentmem.FinalAnswerStep).
	for i := len(res.Steps) - 1; i >= 0; i-- {
		if s, ok := byNumber[res.Steps[i]]; ok && s.Kind() == agentmem.KindFinalAnswer {
			counts[i] = 0
		} else if counts[i] > 0 {
			break
		}
	}
	var owner []int
	for i, n := range res.Steps {
		for range counts[i] {
			owner = append(owner, n)
		}
	}
	labelled := len(owner) == len(res.Messages)
	out := make([]messageView, 0, hi-lo)
	sum := 0
	for i, msg := range res.Messages {
		tokens := agentmem.MessageTokens(c, msg)
		sum += tokens
		if i < lo || i >= hi {
			continue
		}
		mv := newMessageView(msg, tokens)
		if labelled {
			mv.Step, mv.HasStep = owner[i], true
		}
		out = append(out, mv)
	}
	return out, sum
}

// statuses gives every entry of the prefix its status in the context
// res (nil when the budget was too small: then nothing was sent). The
// rows of steps are not described yet (see describe): that renders and
// counts the step, for the rows a page lists.
func statuses(entries []store.Entry, ws []agentmem.Step, res *agentmem.Context) []logRow {
	shown, truncated, dropped := map[int]bool{}, map[int]bool{}, map[int]bool{}
	newestCut := -1 // the newest step, truncated because alone it did not fit
	var summarized []agentmem.Range
	index := make(map[int]int, len(ws))
	for i, s := range ws {
		index[s.Info().Number] = i
	}
	if res != nil {
		for _, n := range res.Steps {
			shown[n] = true
		}
		for _, n := range res.Truncated {
			truncated[n] = true
		}
		if res.NewestTruncated && len(res.Truncated) > 0 {
			newestCut = res.Truncated[len(res.Truncated)-1]
		}
		// A dropped run is Count consecutive working-set steps from First.
		for _, run := range res.Dropped {
			if i, ok := index[run.First]; ok {
				for k := i; k < i+run.Count && k < len(ws); k++ {
					dropped[ws[k].Info().Number] = true
				}
			}
		}
		summarized = res.Summarized
	}
	removedBy := map[int]int64{}
	for _, e := range entries {
		if e.Kind == store.CompactionEntry && e.Compaction != nil {
			for _, n := range e.Compaction.Removed {
				removedBy[int(n)] = e.Seq
			}
		}
	}
	// An amendment is shown in the row of the step it completed, and the row
	// describes the completed step. The steps it amends are in the working
	// set, so in the prefix.
	vs := newVersions()
	var rows []logRow
	rowOf := map[int64]int{}
	times := map[int64]time.Time{}
	for _, e := range entries {
		switch {
		case e.Kind == store.CompactionEntry && e.Compaction != nil && e.Compaction.Amend:
			for _, r := range e.Compaction.Replaced {
				n := int64(r.Info().Number)
				prev, known := vs.amend(r)
				if k, ok := rowOf[n]; ok && known {
					rows[k].Arrived = append(rows[k].Arrived, arrivalText(describeAmendment(prev, r), times[n], e.Time, false))
				}
			}
		case e.Kind == store.CompactionEntry && e.Compaction != nil:
			rows = append(rows, logRow{Seq: e.Seq, Kind: string(e.Kind), Compaction: vs.compact(e.Compaction)})
		case e.Step != nil:
			vs.step(e.Seq, e.Step)
			rowOf[e.Seq], times[e.Seq] = len(rows), e.Time
			rows = append(rows, logRow{Seq: e.Seq, Kind: string(e.Step.Kind())})
		}
	}
	for k := range rows {
		row := &rows[k]
		if row.Compaction != nil {
			continue
		}
		n := int(row.Seq)
		row.step = vs.shown[row.Seq]
		i, inWS := index[n]
		switch {
		case res == nil:
			row.Status, row.Detail = StatusPruned, "nothing was sent: the budget cannot hold the pinned steps"
		case inWS && agentmem.IsPending(ws[i]):
			row.Status, row.Detail = StatusPending, "not sent: tool calls "+strings.Join(ws[i].(*agentmem.ActionStep).Unanswered(), ", ")+" await their results"
		case n == newestCut:
			row.Status, row.Detail = StatusTruncated, "the newest step alone was larger than what the budget left after the pinned steps: sent with its observations shortened to fit, rather than left out, so the model sees its last result"
		case truncated[n]:
			row.Status, row.Detail = StatusTruncated, "observations shortened to fill the budget"
		case shown[n] && inWS && !vs.same(ws[i], row.step):
			row.Status, row.Detail = StatusTruncated, "observations shortened by a compaction"
		case shown[n] && vs.amended(row.Seq):
			row.Status, row.Detail = StatusShown, "with the tool results that arrived after it"
		case shown[n]:
			row.Status = StatusShown
			if cv := covers(row.step); cv != "" {
				row.Detail = "summarizes steps " + cv
			}
		case dropped[n]:
			row.Status, row.Detail = StatusPruned, "left out: over the budget"
		case !inWS && inRanges(summarized, n):
			row.Status, row.Detail = StatusSummarized, "covered by summary #"+strconv.Itoa(summaryOf(ws, n, shown))
		case !inWS && summaryOf(ws, n, nil) > 0:
			row.Status, row.Detail = StatusSummarized, "covered by summary #"+strconv.Itoa(summaryOf(ws, n, nil))+", which was left out"
		case !inWS && removedBy[n] > 0:
			row.Status, row.Detail = StatusPruned, "removed from the working set by compaction #"+strconv.FormatInt(removedBy[n], 10)
		default:
			row.Status, row.Detail = StatusPruned, "not in the working set"
		}
	}
	return rows
}

// newLogRow describes a step, without a status.
func newLogRow(seq int64, s agentmem.Step, f agentmem.Format, c tokenizer.Counter) logRow {
	row := logRow{Seq: seq, Kind: string(s.Kind()), step: s}
	row.describe(f, c)
	return row
}

// describe fills in the tokens and preview of a step's row, and returns
// the size of the text it counted (messagesBytes).
func (row *logRow) describe(f agentmem.Format, c tokenizer.Counter) int {
	if row.step == nil {
		return 0
	}
	var msgs []agentmem.Message
	msgs, _, row.Tokens = stepCost(f, c, row.step)
	row.Preview = preview(row.step)
	row.step = nil
	return messagesBytes(msgs)
}

func inRanges(rs []agentmem.Range, n int) bool {
	for _, r := range rs {
		if r.Contains(n) {
			return true
		}
	}
	return false
}

// summaryOf returns the number of the summary step of ws that covers step
// n (only among shown ones, when shown is not nil), or 0.
func summaryOf(ws []agentmem.Step, n int, shown map[int]bool) int {
	for _, s := range ws {
		sum, ok := s.(*agentmem.SummaryStep)
		if ok && sum.CoversNumber(n) && (shown == nil || shown[sum.Number]) {
			return sum.Number
		}
	}
	return 0
}

// contextData is the "what the model saw" page's data.
type contextData struct {
	S          sessionHead
	At         int64 // 0: the next call
	View       view
	Formats    []string
	Tokenizers []string
	MV         *modelView
	// Produced is the step the call produced (At's step), if any.
	Produced *logRow
	// Call is the record of the call when the proxy made it (the produced
	// step's metadata). The page then shows the context as the proxy fitted
	// it, unless the query says otherwise.
	Call *proxy.Call
	// Tokens and Budget of the context, and its share of the budget.
	Tokens int
	Budget int
	// MaxTokens is the inspector's maximum context; Capped is set when the
	// view has no budget and the context, fitted to MaxTokens, left
	// steps out.
	MaxTokens    int
	Capped       bool
	BudgetBar    string
	ReplyPriming int
	Wire         string
	// WireOmitted is the size of the wire JSON when it is over MaxWireBytes
	// and so not shown. When the messages' text alone is over MaxWireBytes,
	// the JSON is not built, and it is the size of that text.
	WireOmitted int
	PrevURL     string
	NextURL     string
	TimelineURL string
	// The pages of the messages and of the log. FirstMsgURL and PrevMsgURL
	// are set when this is not the first page of messages, NextMsgURL and
	// LastMsgURL when it is not the last. OlderLogURL is set when older
	// entries are not listed, NewestLogURL when newer ones are not.
	FirstMsgURL, PrevMsgURL, NextMsgURL, LastMsgURL string
	OlderLogURL, NewestLogURL                       string
	// MsgShownFrom and MsgShownTo number the first and last messages
	// shown, from 1; LogTotal counts the log's entries before the call.
	MsgShownFrom, MsgShownTo, LogTotal int
	MaxBytes                           string
	// Hidden carries the query parameters the form does not show.
	HiddenAt string
	// Blocks counts the memory blocks the session's contexts show now, which
	// the page leaves out: it rebuilds the steps of the call, not the blocks
	// as they were. BlocksURL lists them, with their versions.
	Blocks    int
	BlocksURL string
}

// proxiedCall returns the record of the call that produced step at when
// the proxy made it (proxy.CallOf). For what the query does not set, it
// makes the view the one the proxy fitted the context with: its budget,
// format, tokenizer, and the newest step truncated to fill.
func (in *Inspector) proxiedCall(r *http.Request, sess *store.Session, at int64, q url.Values, v *view) *proxy.Call {
	if at < 1 {
		return nil
	}
	resp, err := in.svc.Read(r.Context(), store.ReadRequest{Tenant: sess.Tenant, SessionID: sess.ID, After: at - 1, Limit: 1})
	if err != nil || len(resp.Entries) != 1 || resp.Entries[0].Seq != at || resp.Entries[0].Step == nil {
		return nil
	}
	call, ok := proxy.CallOf(resp.Entries[0].Step.Info().Metadata)
	if !ok {
		return nil
	}
	if _, set := q["budget"]; !set && call.Budget > 0 && call.Budget <= in.cfg.MaxContextTokens {
		v.Budget = call.Budget
	}
	if _, err := render.ByName(call.API); err == nil && q.Get("format") == "" {
		v.Format = call.API
	}
	if _, err := tokenizer.Get(call.Tokenizer); err == nil && q.Get("tokenizer") == "" {
		v.Tokenizer = call.Tokenizer
	}
	if _, set := q["truncate"]; !set {
		v.Truncate = true
	}
	return call
}

// context serves what the model saw:
// GET /sessions/{id}/context?at=&budget=&format=&tokenizer=&truncate=.
func (in *Inspector) context(w http.ResponseWriter, r *http.Request) {
	sess, q, v, ok := in.sessionView(w, r)
	if !ok {
		return
	}
	at, err := parseAt(q)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	msgPage, before, err := parseContextPages(q)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	if v.Budget > in.cfg.MaxContextTokens {
		in.fail(w, r, invalid("budget", "is %d tokens, more than this server's maximum context of %d tokens", v.Budget, in.cfg.MaxContextTokens))
		return
	}
	if at > sess.LastSeq+1 {
		in.fail(w, r, invalid("at", "step %d is past the end of the log (its last entry is %d)", at, sess.LastSeq))
		return
	}
	call := in.proxiedCall(r, sess, at, q, &v)
	tc, err := tokenizer.Get(v.Tokenizer)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	// The context, its messages and the steps of its log are counted by
	// one counter, each text once.
	counter := newPageCounter(tc)
	lc, err := in.svc.ContextAt(r.Context(), sessions.ContextRequest{Tenant: sess.Tenant, SessionID: sess.ID, Budget: in.fitTo(v),
		Format: v.Format, Counter: counter, TruncateToFill: v.Truncate}, at)
	var be *agentmem.BudgetError
	if err != nil && !errors.As(err, &be) {
		if isNotFound(err) {
			err = notFound("No such session.")
		}
		in.fail(w, r, err)
		return
	}
	sess = lc.Session
	produced := lc.Produced
	mv, err := buildModelView(lc, be, msgPage, before)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	d := &contextData{
		S: newSessionHead(sess), At: at, View: v, Call: call, Formats: render.Names(), Tokenizers: tokenizer.Names(), MV: mv,
		Budget: v.Budget, MaxTokens: in.cfg.MaxContextTokens, ReplyPriming: agentmem.ReplyPriming,
		TimelineURL:  withQuery(sessionURL(sess.ID), v.values(in.def)),
		MsgShownFrom: mv.MsgFrom + 1, MsgShownTo: mv.MsgFrom + len(mv.Messages), LogTotal: mv.Hidden + len(mv.Log) + mv.Newer, MaxBytes: strconv.Itoa(MaxTimelineBytes>>20) + " MiB",
	}
	if at > 0 {
		d.HiddenAt = strconv.FormatInt(at, 10)
	}
	if produced != nil && produced.Step != nil {
		row := newLogRow(produced.Seq, produced.Step, lc.Format, counter)
		d.Produced = &row
	}
	if res := mv.Context; res != nil {
		d.Tokens = res.Tokens
		d.Capped = v.Budget == 0 && res.DroppedSteps > 0
		d.BudgetBar = barWidth(res.Tokens, v.Budget)
		// The wire JSON holds the messages' text: when that alone is over
		// the bound, the JSON is not built only to be left out.
		if text := messagesBytes(res.Messages); text > MaxWireBytes {
			d.WireOmitted = text
		} else if wire, err := render.Encode(v.Format, res.Messages); err == nil {
			b, err := json.MarshalIndent(wire, "", "  ")
			switch {
			case err != nil:
			case len(b) > MaxWireBytes:
				d.WireOmitted = len(b)
			default:
				d.Wire = string(b)
			}
		}
	}
	link := func(n int64) string {
		lq := v.values(in.def)
		if n > 0 {
			lq.Set("at", strconv.FormatInt(n, 10))
		}
		return withQuery(sessionURL(sess.ID)+"/context", lq)
	}
	// The other pages of this context's messages and log, each link
	// keeping the other list's page.
	pageLink := func(page int, before int64) string {
		lq := v.values(in.def)
		if at > 0 {
			lq.Set("at", strconv.FormatInt(at, 10))
		}
		if page > 1 {
			lq.Set("page", strconv.Itoa(page))
		}
		if before > 0 {
			lq.Set("before", strconv.FormatInt(before, 10))
		}
		return withQuery(sessionURL(sess.ID)+"/context", lq)
	}
	if mv.Page > 1 {
		d.FirstMsgURL, d.PrevMsgURL = pageLink(1, before), pageLink(mv.Page-1, before)
	}
	if mv.Page < mv.Pages {
		d.NextMsgURL, d.LastMsgURL = pageLink(mv.Page+1, before), pageLink(mv.Pages, before)
	}
	if mv.Hidden > 0 {
		d.OlderLogURL = pageLink(mv.Page, mv.Log[0].Seq)
	}
	if mv.Newer > 0 {
		d.NewestLogURL = pageLink(mv.Page, 0)
	}
	if at > 1 {
		d.PrevURL = link(at - 1)
	} else if at == 0 && sess.LastSeq > 0 {
		d.PrevURL = link(sess.LastSeq)
	}
	if at > 0 && at <= sess.LastSeq {
		d.NextURL = link(at + 1)
	}
	if d.Blocks, err = in.shownBlocks(r.Context(), sess); err != nil {
		in.fail(w, r, err)
		return
	}
	d.BlocksURL = blocksURL(blocks.Session(sess.ID))
	title := "Next call"
	if at > 0 {
		title = "At step " + strconv.FormatInt(at, 10)
	}
	in.show(w, r, "context", page{Title: title + " · " + sess.ID, Nav: "sessions", Tenant: sess.Tenant, Data: d})
}
