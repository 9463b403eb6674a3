package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// stepTime is the time the fixture steps carry: nanoseconds and a zone
// other than UTC, so a backend that does not keep step JSON exactly shows.
var stepTime = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("CET", 3600))

func info(id string) agentmem.StepInfo {
	return agentmem.StepInfo{ID: id, Time: stepTime, Metadata: map[string]string{"fixture": id}}
}

func systemStep(id string) *agentmem.SystemPromptStep {
	return &agentmem.SystemPromptStep{StepInfo: info(id), Content: "You are a careful agent <&>."}
}

func taskStep(id, text string) *agentmem.TaskStep {
	return &agentmem.TaskStep{StepInfo: info(id), Task: text}
}

func actionStep(id string) *agentmem.ActionStep {
	call := "call_" + id
	return &agentmem.ActionStep{
		StepInfo:    info(id),
		Thought:     "look it up",
		ModelOutput: "calling search for " + id,
		ToolCalls:   []agentmem.ToolCall{{ID: call, Name: "search", Arguments: `{"q":"` + id + `"}`}},
		Results:     []agentmem.ToolResult{{CallID: call, Content: strings.Repeat("result of "+id+" ", 20)}},
		Usage:       &agentmem.Usage{InputTokens: 10, OutputTokens: 5},
		Duration:    1500 * time.Millisecond,
	}
}

func summaryStep(id, text string, covers ...agentmem.Range) *agentmem.SummaryStep {
	return &agentmem.SummaryStep{StepInfo: info(id), Summary: text, Covers: covers}
}

func messageStep(id, text string) *agentmem.MessageStep {
	return &agentmem.MessageStep{StepInfo: info(id), Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(text)}}
}

// steps returns n action steps with IDs prefix-1 ... prefix-n.
func steps(prefix string, n int) []agentmem.Step {
	out := make([]agentmem.Step, n)
	for i := range out {
		out[i] = actionStep(fmt.Sprintf("%s-%d", prefix, i+1))
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// encode is a step's JSON, or a failure.
func (e *env) encode(s agentmem.Step) string {
	e.t.Helper()
	b, err := store.EncodeStep(s)
	if err != nil {
		e.t.Fatalf("EncodeStep: %v", err)
	}
	return string(b)
}

// numbered is the JSON a store must return for s stored at seq.
func (e *env) numbered(s agentmem.Step, seq int64) string {
	e.t.Helper()
	return e.encode(store.WithNumber(s, seq))
}

func (e *env) create(req store.CreateRequest) *store.Session {
	e.t.Helper()
	s, err := e.st.Create(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Create(%+v): %v", req, err)
	}
	return s
}

// splitKey splits a test's name for a session, "tenant/id" or "id" (the
// default tenant): a session ID cannot contain a slash.
func splitKey(key string) (tenant, id string) {
	if t, i, ok := strings.Cut(key, "/"); ok {
		return t, i
	}
	return "", key
}

func (e *env) get(key string) *store.Session {
	e.t.Helper()
	tenant, id := splitKey(key)
	s, err := e.st.Get(e.ctx, tenant, id)
	if err != nil {
		e.t.Fatalf("Get(%q): %v", id, err)
	}
	return s
}

func (e *env) append(req store.AppendRequest) *store.AppendResponse {
	e.t.Helper()
	resp, err := e.st.Append(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Append to %q: %v", req.SessionID, err)
	}
	return resp
}

// appendSteps appends steps and returns their seqs.
func (e *env) appendSteps(key string, ss ...agentmem.Step) []int64 {
	e.t.Helper()
	tenant, id := splitKey(key)
	return e.append(store.AppendRequest{Tenant: tenant, SessionID: id, Steps: ss}).Seqs
}

func (e *env) read(req store.ReadRequest) *store.ReadResponse {
	e.t.Helper()
	resp, err := e.st.Read(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Read(%+v): %v", req, err)
	}
	return resp
}

func (e *env) entries(key string) []store.Entry {
	e.t.Helper()
	tenant, id := splitKey(key)
	return e.read(store.ReadRequest{Tenant: tenant, SessionID: id}).Entries
}

func (e *env) workingSet(key string) []agentmem.Step {
	e.t.Helper()
	tenant, id := splitKey(key)
	return e.read(store.ReadRequest{Tenant: tenant, SessionID: id, WorkingSet: true}).Steps
}

// wantErr fails unless err wraps target.
func (e *env) wantErr(err, target error, what string) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Fatalf("%s: got error %v, want one wrapping %v", what, err, target)
	}
}

// wantExists fails unless err is a *store.ExistsError for the session id
// (so it wraps agentmem.ErrConflict) and says nothing else: a transport
// shows its message as it is, so it must not name the backend.
func (e *env) wantExists(err error, id, what string) {
	e.t.Helper()
	e.wantErr(err, agentmem.ErrConflict, what)
	var ee *store.ExistsError
	if !errors.As(err, &ee) || ee.ID != id {
		e.t.Fatalf("%s: got error %v, want a *store.ExistsError for %q", what, err, id)
	}
	if err.Error() != ee.Error() {
		e.t.Fatalf("%s: the error says %q, more than the *store.ExistsError's %q", what, err.Error(), ee.Error())
	}
}

func seqsOf(entries []store.Entry) []int64 {
	out := make([]int64, len(entries))
	for i, en := range entries {
		out[i] = en.Seq
	}
	return out
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func (e *env) wantSeqs(got, want []int64, what string) {
	e.t.Helper()
	if !slices.Equal(got, want) {
		e.t.Fatalf("%s: seqs %v, want %v", what, got, want)
	}
}

// stepsJSON renders steps for comparison, one JSON per line.
func (e *env) stepsJSON(ss []agentmem.Step) string {
	e.t.Helper()
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(e.encode(s))
		b.WriteByte('\n')
	}
	return b.String()
}

// wantSteps checks a list of steps against the JSON wanted for each.
func (e *env) wantSteps(got []agentmem.Step, want []string, what string) {
	e.t.Helper()
	if len(got) != len(want) {
		e.t.Fatalf("%s: %d steps, want %d:\n%s", what, len(got), len(want), e.stepsJSON(got))
	}
	for i := range got {
		if g := e.encode(got[i]); g != want[i] {
			e.t.Fatalf("%s: step %d is\n%s\nwant\n%s", what, i, g, want[i])
		}
	}
}

// entryJSON renders an entry for comparison.
func (e *env) entryJSON(en store.Entry) string {
	e.t.Helper()
	var body []byte
	var err error
	switch en.Kind {
	case store.StepEntry:
		if en.Step == nil {
			e.t.Fatalf("step entry %d has no step", en.Seq)
		}
		if n := int64(en.Step.Info().Number); n != en.Seq {
			e.t.Fatalf("step entry %d holds a step numbered %d", en.Seq, n)
		}
		body, err = store.EncodeStep(en.Step)
	case store.CompactionEntry:
		if en.Compaction == nil {
			e.t.Fatalf("compaction entry %d has no record", en.Seq)
		}
		body, err = store.EncodeCompaction(en.Compaction)
	default:
		e.t.Fatalf("entry %d has unknown kind %q", en.Seq, en.Kind)
	}
	if err != nil {
		e.t.Fatalf("entry %d: %v", en.Seq, err)
	}
	return fmt.Sprintf("%d %s %s %s", en.Seq, en.Kind, en.Time.UTC().Format(time.RFC3339Nano), body)
}

func (e *env) entriesJSON(entries []store.Entry) string {
	e.t.Helper()
	var b strings.Builder
	for _, en := range entries {
		b.WriteString(e.entryJSON(en))
		b.WriteByte('\n')
	}
	return b.String()
}

func sessionLine(s *store.Session) string {
	keys := make([]string, 0, len(s.Metadata))
	for k := range s.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var md strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&md, "%q=%q,", k, s.Metadata[k])
	}
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	pin, auto, extract := "-", "-", "-"
	if s.ExtractFacts != nil {
		extract = fmt.Sprint(*s.ExtractFacts)
	}
	if s.Pinning != nil {
		pin = fmt.Sprintf("%+v", *s.Pinning)
	}
	if s.AutoCompact != nil {
		auto = fmt.Sprintf("%+v", *s.AutoCompact)
	}
	return fmt.Sprintf("id=%q tenant=%q user=%q agent=%q parent=%q fork=%d md={%s} ret=%s exp=%s created=%s updated=%s last=%d extract=%s pin=%s auto=%s",
		s.ID, s.Tenant, s.UserID, s.Agent, s.ParentID, s.ForkSeq, md.String(), s.Retention,
		ts(s.ExpiresAt), ts(s.CreatedAt), ts(s.UpdatedAt), s.LastSeq, extract, pin, auto)
}

// dump renders everything a reader can see in the store: every listed
// session and its log. Tests compare dumps to show a refused call changed
// nothing.
func (e *env) dump() string {
	e.t.Helper()
	var b strings.Builder
	token := ""
	for {
		resp, err := e.st.List(e.ctx, store.ListRequest{PageSize: store.MaxPageSize, PageToken: token})
		if err != nil {
			e.t.Fatalf("List: %v", err)
		}
		for _, s := range resp.Sessions {
			b.WriteString(sessionLine(s))
			b.WriteByte('\n')
			b.WriteString(e.entriesJSON(e.read(store.ReadRequest{Tenant: s.Tenant, SessionID: s.ID}).Entries))
		}
		if resp.NextPageToken == "" {
			return b.String()
		}
		token = resp.NextPageToken
	}
}

// wantUnchanged fails if the store's dump differs from before.
func (e *env) wantUnchanged(before, what string) {
	e.t.Helper()
	if after := e.dump(); after != before {
		e.t.Fatalf("%s changed the store:\nbefore:\n%s\nafter:\n%s", what, before, after)
	}
}

func (e *env) wantTime(got, want time.Time, what string) {
	e.t.Helper()
	if !got.Equal(want) {
		e.t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// export writes a session's JSONL export.
func (e *env) export(key string) string {
	e.t.Helper()
	var buf bytes.Buffer
	tenant, id := splitKey(key)
	if err := store.Export(e.ctx, e.st, tenant, id, &buf); err != nil {
		e.t.Fatalf("Export(%q): %v", id, err)
	}
	return buf.String()
}
