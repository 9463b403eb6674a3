package recallview

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
)

// MaxObservationBytes is how much of a step's tool results and
// observation StepDocs indexes: enough for what a tool found to be
// recalled, not a whole file dump.
const MaxObservationBytes = 2000

// StepDocs returns what recall indexes of a session's log entry: for a
// step, one document with the text worth recalling, or none for steps
// with nothing to recall (system prompts, empty steps). A compaction
// entry that is an amendment (store.CompactionRecord.Amend), such as a
// tool call completed by a result sent later, gives the documents of its
// copies. Each has the ID and text the step entry it stands in for would
// give, so a step's document shows it as amended. A full compaction
// record gives none: its copies are truncations and summaries'
// stand-ins, which must not replace the full text. The text of each kind:
//
//   - task: the task;
//   - message: "<name or role>: <text>";
//   - action: the thought, the model's output, each tool call (name and
//     arguments), then tool results and the observation, each cut to
//     MaxObservationBytes, and the error;
//   - planning: the plan; scratchpad: the note; summary: the summary;
//   - final answer: the answer.
//
// The document's ID is "<session>#<seq>", its Group the session and its
// Seq the entry's sequence number. Its Time is the step's time, or the
// entry's when the step has none. Its metadata are session, user, agent
// (when set), step (the sequence number) and kind; an amendment's copies
// add entry (MetaEntry). StepDocs is a pure function, so a server can
// call it on every append and a backfill gives the same documents.
func StepDocs(sess *store.Session, e store.Entry) []recall.Doc {
	if c := e.Compaction; e.Kind == store.CompactionEntry && c != nil && c.Amend && sess != nil {
		var docs []recall.Doc
		for _, r := range c.Replaced {
			for _, d := range StepDocs(sess, store.Entry{Seq: int64(r.Info().Number), Kind: store.StepEntry, Step: r, Time: e.Time}) {
				d.Metadata[recall.MetaEntry] = strconv.FormatInt(e.Seq, 10)
				docs = append(docs, d)
			}
		}
		return docs
	}
	if e.Step == nil || sess == nil {
		return nil
	}
	text := stepText(e.Step)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	text = agentmem.TruncateText(strings.ToValidUTF8(strings.ReplaceAll(text, "\x00", ""), "\uFFFD"), recall.MaxTextBytes-64)
	seq := strconv.FormatInt(e.Seq, 10)
	meta := map[string]string{
		recall.MetaSession: sess.ID,
		recall.MetaStep:    seq,
		recall.MetaKind:    string(e.Step.Kind()),
	}
	if sess.UserID != "" {
		meta[recall.MetaUser] = sess.UserID
	}
	if sess.Agent != "" {
		meta[recall.MetaAgent] = sess.Agent
	}
	t := e.Step.Info().Time
	if t.IsZero() {
		t = e.Time
	}
	return []recall.Doc{{
		ID:       sess.ID + "#" + seq,
		Tenant:   sess.Tenant,
		Text:     text,
		Metadata: meta,
		Time:     t,
		Group:    sess.ID,
		Seq:      e.Seq,
	}}
}

// IsStepDoc reports whether d has the form of a document StepDocs makes:
// its ID "<session>#<seq>", its Group the session, its metadata's session
// the same, and its metadata's step and its Seq the seq. Such documents
// are derived from a session's log, which indexing the session makes
// again (an export leaves them out); every other document of the index
// was put there by a caller.
func IsStepDoc(d recall.Doc) bool {
	seq := strconv.FormatInt(d.Seq, 10)
	return d.Group != "" && d.Seq > 0 && d.ID == d.Group+"#"+seq &&
		d.Metadata[recall.MetaSession] == d.Group && d.Metadata[recall.MetaStep] == seq
}

// stepText is the recallable text of a step: its parts that are not
// blank, a line each. Indexing every appended step calls it, so it copies
// nothing for a step of one part and writes the lines of others into one
// string of their exact size.
func stepText(s agentmem.Step) string {
	var first [8]textLine // the lines of most steps, without an allocation
	lines := first[:0]
	obs := func(s string) string { return agentmem.TruncateText(s, MaxObservationBytes) }
	switch s := s.(type) {
	case *agentmem.TaskStep:
		lines = addLine(lines, s.Task)
	case *agentmem.MessageStep:
		who := s.Message.Name
		if who == "" {
			who = string(s.Message.Role)
		}
		if text := s.Message.Text(); strings.TrimSpace(text) != "" {
			lines = append(lines, textLine{who, ": ", text})
		}
	case *agentmem.ActionStep:
		lines = addLine(lines, s.Thought)
		lines = addLine(lines, s.ModelOutput)
		for _, c := range s.ToolCalls {
			lines = addCall(lines, c.Name, obs(c.Arguments))
		}
		for _, r := range s.Results {
			lines = addLine(lines, obs(r.Content))
		}
		lines = addLine(lines, obs(s.Observation))
		lines = addLine(lines, s.Error)
	case *agentmem.PlanningStep:
		lines = addLine(lines, s.Plan)
	case *agentmem.ScratchpadStep:
		lines = addLine(lines, s.Content)
	case *agentmem.SummaryStep:
		lines = addLine(lines, s.Summary)
	case *agentmem.FinalAnswerStep:
		lines = addLine(lines, s.Answer)
	}
	return joinLines(lines)
}

// textLine is a line of a step's text in up to three pieces, so that the
// text is written once, at its exact size.
type textLine [3]string

// addLine appends s as a line unless it is blank.
func addLine(lines []textLine, s string) []textLine {
	if strings.TrimSpace(s) == "" {
		return lines
	}
	return append(lines, textLine{s})
}

// addCall appends the line of a tool call, strings.TrimSpace(name + " " +
// args) unless it is blank, without building the joined string.
func addCall(lines []textLine, name, args string) []textLine {
	name = strings.TrimLeftFunc(name, unicode.IsSpace)
	args = strings.TrimRightFunc(args, unicode.IsSpace)
	switch {
	case name == "":
		return addLine(lines, strings.TrimLeftFunc(args, unicode.IsSpace))
	case args == "":
		return addLine(lines, strings.TrimRightFunc(name, unicode.IsSpace))
	}
	return append(lines, textLine{name, " ", args})
}

// joinLines joins lines with newlines. A text of a single piece is that
// piece, not a copy.
func joinLines(lines []textLine) string {
	switch {
	case len(lines) == 0:
		return ""
	case len(lines) == 1 && lines[0][1] == "" && lines[0][2] == "":
		return lines[0][0]
	}
	n := len(lines) - 1
	for _, l := range lines {
		n += len(l[0]) + len(l[1]) + len(l[2])
	}
	var b strings.Builder
	b.Grow(n)
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l[0])
		b.WriteString(l[1])
		b.WriteString(l[2])
	}
	return b.String()
}

// Indexer keeps an Index's conversation recall in step with a store: it
// indexes the entries a server appends, backfills sessions written
// before, and forgets deleted sessions.
type Indexer struct {
	// Index receives the documents.
	Index *recall.Index
	// Store is where Backfill reads sessions.
	Store *store.Store
}

// lineage reports whether the index finds a branch's inherited history
// through its lineage, so that it is not indexed again for the branch.
func (x *Indexer) lineage() bool { return x.Index.Lineage() != nil }

// Add indexes entries appended to a session (see StepDocs).
func (x *Indexer) Add(ctx context.Context, sess *store.Session, entries ...store.Entry) error {
	docs := entryDocs(sess, entries)
	if len(docs) == 0 {
		return nil
	}
	if err := x.Index.Upsert(ctx, docs...); err != nil {
		return fmt.Errorf("recall: index session %q: %w", sess.ID, err)
	}
	return nil
}

// Forget removes a session's documents.
func (x *Indexer) Forget(ctx context.Context, sess *store.Session) (int, error) {
	return x.Index.Clear(ctx, sess.Tenant, recall.Filter{Metadata: map[string]string{recall.MetaSession: sess.ID}})
}

// inheritedThrough returns the last seq of a session's log found through
// its lineage (0: none): what Backfill does not index again.
func (x *Indexer) inheritedThrough(ctx context.Context, tenant, id string) (int64, error) {
	if !x.lineage() {
		return 0, nil
	}
	if !x.Store.Supports(store.CanSegment) {
		return 0, nil
	}
	segs, err := x.Store.Segments(ctx, tenant, id)
	if errors.Is(err, agentmem.ErrNotFound) || (err == nil && len(segs) == 0) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return segs[0].After, nil
}

// Backfill indexes every entry of the sessions the request lists (all
// pages), as Add would have, and returns the number of documents
// written. Of a branch whose history the index finds through its lineage
// (Options.Lineage, over a store.Segmenter), only the entries of its own
// log. Indexing is idempotent, so it can run again after a crash.
func (x *Indexer) Backfill(ctx context.Context, req store.ListRequest) (int, error) {
	n := 0
	for {
		page, err := x.Store.List(ctx, req)
		if err != nil {
			return n, err
		}
		for _, s := range page.Sessions {
			rr := store.ReadRequest{Tenant: s.Tenant, SessionID: s.ID}
			if after, err := x.inheritedThrough(ctx, s.Tenant, s.ID); err != nil {
				return n, fmt.Errorf("recall: backfill session %q: %w", s.ID, err)
			} else if after > 0 {
				rr.After = after // found through the session's lineage
			}
			resp, err := x.Store.Read(ctx, rr)
			if errors.Is(err, agentmem.ErrNotFound) {
				continue // deleted since it was listed
			}
			if err != nil {
				return n, fmt.Errorf("recall: backfill session %q: %w", s.ID, err)
			}
			const batch = 256
			for start := 0; start < len(resp.Entries); start += batch {
				docs := entryDocs(resp.Session, resp.Entries[start:min(start+batch, len(resp.Entries))])
				if len(docs) == 0 {
					continue
				}
				if err := x.Index.Upsert(ctx, docs...); err != nil {
					return n, fmt.Errorf("recall: backfill session %q: %w", s.ID, err)
				}
				n += len(docs)
			}
		}
		if page.NextPageToken == "" {
			return n, nil
		}
		req.PageToken = page.NextPageToken
	}
}

// entryDocs returns the documents of entries of a session (StepDocs), one
// per ID: an amendment's document replaces the one of the step it
// amends, as a later upsert would (an upsert takes an ID once).
func entryDocs(sess *store.Session, entries []store.Entry) []recall.Doc {
	var set docSet
	for _, e := range entries {
		set.add(StepDocs(sess, e)...)
	}
	return set.docs
}

// docSet collects documents in order; a later document with the ID of one
// collected replaces it (an upsert refuses an ID repeated in one call).
type docSet struct {
	docs []recall.Doc
	at   map[string]int // ID: index in docs
}

func (s *docSet) add(docs ...recall.Doc) {
	if s.at == nil {
		s.at = map[string]int{}
	}
	for _, d := range docs {
		if i, ok := s.at[d.ID]; ok {
			s.docs[i] = d
			continue
		}
		s.at[d.ID] = len(s.docs)
		s.docs = append(s.docs, d)
	}
}
