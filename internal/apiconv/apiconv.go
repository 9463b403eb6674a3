// Package apiconv converts between the HTTP API's wire types (package
// api, which imports nothing of agentmem's domain) and the domain's types:
// sessions and their settings, steps, compaction entries, contexts, facts
// and chat messages. The server converts its answers with it and the
// store adapter of the Go client (package client/remote) its requests and
// the answers it reads, so each conversion is written once.
//
// A wire type has the JSON members of its domain type, with the same
// names and options. A value converted to the wire thus encodes to the
// same bytes as the domain value did, which the package's tests check.
package apiconv

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
)

// Session returns the wire form of a session.
func Session(s *store.Session) *api.Session {
	if s == nil {
		return nil
	}
	return &api.Session{
		ID: s.ID, Tenant: s.Tenant, UserID: s.UserID, Agent: s.Agent,
		ParentID: s.ParentID, ForkSeq: s.ForkSeq, Metadata: s.Metadata,
		Retention: string(s.Retention), ExpiresAt: s.ExpiresAt, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		LastSeq: s.LastSeq, Pinning: Pinning(s.Pinning), AutoCompact: AutoCompact(s.AutoCompact), ExtractFacts: Bool(s.ExtractFacts),
	}
}

// Sessions returns the wire form of sessions; nil ones stay nil.
func Sessions(ss []*store.Session) []*api.Session {
	out := make([]*api.Session, len(ss))
	for i, s := range ss {
		out[i] = Session(s)
	}
	return out
}

// SessionFromAPI returns the session of its wire form.
func SessionFromAPI(s *api.Session) *store.Session {
	if s == nil {
		return nil
	}
	return &store.Session{
		ID: s.ID, Tenant: s.Tenant, UserID: s.UserID, Agent: s.Agent,
		ParentID: s.ParentID, ForkSeq: s.ForkSeq, Metadata: s.Metadata,
		Retention: store.Retention(s.Retention), ExpiresAt: s.ExpiresAt, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		LastSeq: s.LastSeq, Pinning: PinningFromAPI(s.Pinning), AutoCompact: AutoCompactFromAPI(s.AutoCompact), ExtractFacts: Bool(s.ExtractFacts),
	}
}

// Pinning returns the wire form of a pinning (nil for nil).
func Pinning(p *agentmem.Pinning) *api.Pinning {
	if p == nil {
		return nil
	}
	return &api.Pinning{SystemPrompts: p.SystemPrompts, FirstTask: p.FirstTask, Tasks: p.Tasks, Summary: p.Summary}
}

// PinningFromAPI returns the pinning of its wire form (nil for nil).
func PinningFromAPI(p *api.Pinning) *agentmem.Pinning {
	if p == nil {
		return nil
	}
	return &agentmem.Pinning{SystemPrompts: p.SystemPrompts, FirstTask: p.FirstTask, Tasks: p.Tasks, Summary: p.Summary}
}

// AutoCompact returns the wire form of automatic compaction settings (nil
// for nil).
func AutoCompact(a *store.AutoCompact) *api.AutoCompact {
	if a == nil {
		return nil
	}
	return &api.AutoCompact{MaxTokens: a.MaxTokens, TargetTokens: a.TargetTokens, KeepRecent: a.KeepRecent, Summarizer: a.Summarizer}
}

// AutoCompactFromAPI returns the automatic compaction settings of their
// wire form (nil for nil).
func AutoCompactFromAPI(a *api.AutoCompact) *store.AutoCompact {
	if a == nil {
		return nil
	}
	return &store.AutoCompact{MaxTokens: a.MaxTokens, TargetTokens: a.TargetTokens, KeepRecent: a.KeepRecent, Summarizer: a.Summarizer}
}

// Bool returns a copy of a setting that may be absent (nil for nil), so
// that the wire form and the stored one share nothing.
func Bool(b *bool) *bool {
	if b == nil {
		return nil
	}
	c := *b
	return &c
}

// Steps encodes steps in the step JSON (agentmem.MarshalStep). Errors
// name the step by index and wrap agentmem.ErrInvalid.
func Steps(steps []agentmem.Step) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(steps))
	for i, s := range steps {
		b, err := agentmem.MarshalStep(s)
		if err != nil {
			return nil, fmt.Errorf("steps[%d]: %w", i, err)
		}
		out[i] = b
	}
	return out, nil
}

// StepsFromAPI decodes steps from the step JSON, strictly
// (agentmem.UnmarshalStep). Errors name the step by index and wrap
// agentmem.ErrInvalid.
func StepsFromAPI(raw []json.RawMessage) ([]agentmem.Step, error) {
	out := make([]agentmem.Step, len(raw))
	for i, r := range raw {
		s, err := agentmem.UnmarshalStep(r)
		if err != nil {
			return nil, fmt.Errorf("steps[%d]: %w", i, err)
		}
		out[i] = s
	}
	return out, nil
}

// CompactionRecord returns the wire form of a compaction record to append
// (store.EncodeCompaction's form: a full record always has its working
// list, an amendment never).
func CompactionRecord(c *store.CompactionRecord) (*api.CompactionRecord, error) {
	if c == nil {
		return nil, nil
	}
	replaced, err := Steps(c.Replaced)
	if err != nil {
		return nil, fmt.Errorf("compaction.replaced: %w", err)
	}
	out := &api.CompactionRecord{Amend: c.Amend, Removed: c.Removed}
	if len(replaced) > 0 {
		out.Replaced = replaced
	}
	if !c.Amend {
		w := c.Working
		if w == nil {
			w = []int64{}
		}
		out.Working = &w
	}
	return out, nil
}

// ReadSteps returns the wire form of the entries of a log read: its step
// entries in Steps and its compaction entries in Compactions, each in
// order.
func ReadSteps(entries []store.Entry, lastSeq int64) (*api.ReadStepsResponse, error) {
	out := &api.ReadStepsResponse{Steps: make([]json.RawMessage, 0, len(entries)), LastSeq: lastSeq}
	for _, en := range entries {
		switch {
		case en.Kind == store.StepEntry && en.Step != nil:
			b, err := agentmem.MarshalStep(en.Step)
			if err != nil {
				return nil, fmt.Errorf("entry %d: %w", en.Seq, err)
			}
			out.Steps = append(out.Steps, b)
		case en.Kind == store.CompactionEntry && en.Compaction != nil:
			c := api.CompactionEntry{Seq: en.Seq, Time: en.Time, Amend: en.Compaction.Amend, Removed: en.Compaction.Removed}
			if len(en.Compaction.Replaced) > 0 {
				var err error
				if c.Replaced, err = Steps(en.Compaction.Replaced); err != nil {
					return nil, fmt.Errorf("entry %d: %w", en.Seq, err)
				}
			}
			if !c.Amend {
				working := en.Compaction.Working
				if working == nil {
					working = []int64{}
				}
				c.Working = &working
			}
			out.Compactions = append(out.Compactions, c)
		}
	}
	return out, nil
}

// EntriesFromAPI returns the log entries of a read's answer, in the order
// of their sequence numbers: its steps (each numbered by its sequence
// number) and its compaction entries. Step entries have no time: the
// answer does not say when they were appended.
func EntriesFromAPI(r *api.ReadStepsResponse) ([]store.Entry, error) {
	entries := make([]store.Entry, 0, len(r.Steps)+len(r.Compactions))
	for i, raw := range r.Steps {
		s, err := agentmem.UnmarshalStep(raw)
		if err != nil {
			return nil, fmt.Errorf("steps[%d]: %w", i, err)
		}
		entries = append(entries, store.Entry{Seq: int64(s.Info().Number), Kind: store.StepEntry, Step: s})
	}
	for i, ce := range r.Compactions {
		replaced, err := StepsFromAPI(ce.Replaced)
		if err != nil {
			return nil, fmt.Errorf("compactions[%d].replaced: %w", i, err)
		}
		if len(replaced) == 0 {
			replaced = nil
		}
		rec := &store.CompactionRecord{Amend: ce.Amend, Replaced: replaced, Removed: ce.Removed}
		switch {
		case ce.Working != nil && !ce.Amend:
			rec.Working = *ce.Working
		case ce.Working == nil && !ce.Amend:
			// A full record names its working set, even an empty one:
			// one without would read as a working set emptied.
			return nil, fmt.Errorf("compaction entry %d has no working set", ce.Seq)
		}
		entries = append(entries, store.Entry{Seq: ce.Seq, Kind: store.CompactionEntry, Time: ce.Time, Compaction: rec})
	}
	sortEntries(entries)
	return entries, nil
}

// sortEntries sorts entries by sequence number (insertion sort: the steps
// and the compactions come each in order, and compactions are few).
func sortEntries(es []store.Entry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Seq < es[j-1].Seq; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// DroppedRuns returns the wire form of a context's dropped runs.
func DroppedRuns(rs []agentmem.DroppedRun) []api.DroppedRun {
	if rs == nil {
		return nil
	}
	out := make([]api.DroppedRun, len(rs))
	for i, r := range rs {
		out[i] = api.DroppedRun{First: r.First, Last: r.Last, Count: r.Count}
	}
	return out
}

// Ranges returns the wire form of ranges of step numbers.
func Ranges(rs []agentmem.Range) []api.Range {
	if rs == nil {
		return nil
	}
	out := make([]api.Range, len(rs))
	for i, r := range rs {
		out[i] = api.Range{From: r.From, To: r.To}
	}
	return out
}

// Fact returns the wire form of a fact (its embedding is not on the wire).
func Fact(f facts.Fact) api.Fact {
	return api.Fact{
		ID: f.ID, Tenant: f.Tenant, UserID: f.UserID, Text: f.Text, Confidence: f.Confidence,
		CreatedAt: f.CreatedAt, ReinforcedAt: f.ReinforcedAt, Reinforcements: f.Reinforcements,
		Source: FactSource(f.Source), SupersededBy: f.SupersededBy, SupersededAt: f.SupersededAt, Metadata: f.Metadata,
		ValidFrom: f.ValidFrom, ValidTo: f.ValidTo,
	}
}

// FactState returns the wire form of a fact's recorded state; nil for nil.
func FactState(s *facts.FactState) *api.FactState {
	if s == nil {
		return nil
	}
	return &api.FactState{Text: s.Text, Confidence: s.Confidence, Metadata: s.Metadata, ValidFrom: s.ValidFrom, ValidTo: s.ValidTo}
}

// FactChanges returns the wire form of a fact's changelog.
func FactChanges(es []facts.AuditEntry) []api.FactChange {
	out := make([]api.FactChange, len(es))
	for i, e := range es {
		out[i] = api.FactChange{
			Seq: e.Seq, Action: string(e.Action), By: e.By, Reason: e.Reason, At: e.At, Successor: e.Successor, Digest: e.Digest,
			Before: FactState(e.Before), After: FactState(e.After),
		}
	}
	return out
}

// Facts returns the wire form of facts.
func Facts(fs []facts.Fact) []api.Fact {
	if fs == nil {
		return nil
	}
	out := make([]api.Fact, len(fs))
	for i, f := range fs {
		out[i] = Fact(f)
	}
	return out
}

// FactSource returns the wire form of where a fact was learnt.
func FactSource(s facts.Source) api.FactSource {
	return api.FactSource{SessionID: s.SessionID, StepSeq: s.StepSeq, Agent: s.Agent}
}

// FactSourceFromAPI returns where a fact was learnt, from its wire form.
func FactSourceFromAPI(s api.FactSource) facts.Source {
	return facts.Source{SessionID: s.SessionID, StepSeq: s.StepSeq, Agent: s.Agent}
}

// OpenAIMessages returns messages in OpenAI's chat form
// (render.OpenAIRequest), as wire values.
func OpenAIMessages(msgs []agentmem.Message) []api.OpenAIMessage {
	return WireOpenAIMessages(render.OpenAIRequest(msgs))
}

// WireOpenAIMessages returns the wire form of OpenAI chat messages.
func WireOpenAIMessages(msgs []render.OpenAIMessage) []api.OpenAIMessage {
	out := make([]api.OpenAIMessage, len(msgs))
	for i, m := range msgs {
		out[i] = OpenAIMessage(m)
	}
	return out
}

// OpenAIMessage returns the wire form of an OpenAI chat message.
func OpenAIMessage(m render.OpenAIMessage) api.OpenAIMessage {
	out := api.OpenAIMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
	if parts, ok := m.Content.([]render.OpenAIPart); ok {
		wp := make([]api.OpenAIPart, len(parts))
		for i, p := range parts {
			wp[i] = api.OpenAIPart{Type: p.Type, Text: p.Text}
			if p.ImageURL != nil {
				wp[i].ImageURL = &api.OpenAIImageURL{URL: p.ImageURL.URL, Detail: p.ImageURL.Detail}
			}
		}
		out.Content = wp
	}
	if m.ToolCalls != nil {
		out.ToolCalls = make([]api.OpenAIToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			out.ToolCalls[i] = api.OpenAIToolCall{ID: c.ID, Type: c.Type, Function: api.OpenAIFunction{Name: c.Function.Name, Arguments: c.Function.Arguments}}
		}
	}
	return out
}

// Damaged returns the wire form of damaged records.
func Damaged(ds []*agentmem.DamagedError) []api.DamagedRecord {
	if len(ds) == 0 {
		return nil
	}
	out := make([]api.DamagedRecord, len(ds))
	for i, d := range ds {
		out[i] = api.DamagedRecord{ID: d.ID, Error: d.Err.Error()}
	}
	return out
}

// DamagedFromAPI returns damaged records of kind ("session", "fact",
// "document") and tenant from their wire form.
func DamagedFromAPI(kind, tenant string, ds []api.DamagedRecord) []*agentmem.DamagedError {
	if len(ds) == 0 {
		return nil
	}
	out := make([]*agentmem.DamagedError, len(ds))
	for i, d := range ds {
		out[i] = &agentmem.DamagedError{Kind: kind, Tenant: tenant, ID: d.ID, Err: errors.New(d.Error)}
	}
	return out
}
