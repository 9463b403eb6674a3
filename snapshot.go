package agentmem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// SnapshotVersion is the version of the snapshot format Snapshot writes.
const SnapshotVersion = 1

// Snapshot is the state of a Memory in a versioned JSON form:
//
//	{"version":1,"next_number":42,"steps":[...],"pending":{...}}
//
// It carries every step of the working set, summaries included, so a
// resumed run continues where the old one stopped.
type Snapshot struct {
	Version    int      `json:"version"`
	NextNumber int      `json:"next_number"`
	Steps      StepList `json:"steps"`
	// Pending is an action whose tool calls still await results, held apart
	// from Steps as snapshots of earlier versions hold it. Restore adds it
	// to the working set, after Steps. Snapshot leaves it empty, since
	// pending actions are steps of the working set.
	Pending *ActionStep `json:"pending,omitempty"`
}

// Snapshot returns a deep copy of the memory's state.
func (m *workingSet) Snapshot() *Snapshot {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := &Snapshot{Version: SnapshotVersion, NextNumber: m.next, Steps: make(StepList, len(m.entries))}
	for i, e := range m.entries {
		s.Steps[i] = e.step.clone()
	}
	return s
}

// Restore replaces the memory's state with a snapshot, keeping the steps'
// numbers, IDs and times. The snapshot is checked first (valid steps,
// unique numbers below NextNumber) and, if it is refused, nothing changes.
// Restore does not write to a journal: it is how a memory bound to a store
// loads the state its log already holds.
func (m *Memory) Restore(s *Snapshot) error {
	if s == nil {
		return invalidf("snapshot", "is nil")
	}
	if s.Version != SnapshotVersion {
		return invalidf("version", "unsupported snapshot version %d (this build reads %d)", s.Version, SnapshotVersion)
	}
	entries, next, err := numberedEntries(s.Steps, s.NextNumber)
	if err != nil {
		return err
	}
	if s.Pending != nil {
		// An earlier version's held-back action: a step after the others.
		p := s.Pending.clone().(*ActionStep)
		if err := validateToolCalls("pending.tool_calls", p.ToolCalls); err != nil {
			return err
		}
		info := p.Info()
		info.Number = next
		if info.ID == "" {
			info.ID = m.newID()
		}
		if info.Time.IsZero() {
			info.Time = m.now()
		}
		p.setInfo(info)
		entries = append(entries, &entry{step: p})
		next++
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resetLocked(entries, next)
	m.recountLocked()
	return nil
}

// numberedEntries checks numbered steps (valid, with unique numbers, below
// next when next is positive) and returns entries of copies of them, and
// the number after theirs: next, or one past the highest when next is 0.
func numberedEntries(steps []Step, next int) ([]*entry, int, error) {
	entries := make([]*entry, len(steps))
	seen := make(map[int]bool, len(steps))
	fixed := next > 0
	for i, st := range steps {
		if st == nil {
			return nil, 0, invalidf(fmt.Sprintf("steps[%d]", i), "is nil")
		}
		if err := st.Validate(); err != nil {
			return nil, 0, fmt.Errorf("steps[%d]: %w", i, err)
		}
		n := st.Info().Number
		if n < 0 || seen[n] {
			return nil, 0, invalidf(fmt.Sprintf("steps[%d].number", i), "%d is negative or repeated", n)
		}
		seen[n] = true
		if n >= next {
			if fixed {
				return nil, 0, invalidf(fmt.Sprintf("steps[%d].number", i), "%d is not below next_number %d", n, next)
			}
			next = n + 1
		}
		entries[i] = &entry{step: st.clone()}
	}
	return entries, next, nil
}

// resetLocked makes entries the working set. Numbers keep increasing: the
// next is next, or the old next if that is higher. m.mu must be held for
// writing.
func (m *workingSet) resetLocked(entries []*entry, next int) {
	m.entries = entries
	m.layout = m.pin.layoutOf(entries)
	m.next = max(next, m.next)
	m.epoch++
}

// MarshalJSON encodes the snapshot (steps with their "type" fields).
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	type alias Snapshot
	return json.Marshal((*alias)(s))
}

// DecodeSnapshot decodes a snapshot from JSON. Besides the versioned form
// that Snapshot writes, it accepts what the seeds' ShortTermMemory.restore
// does. That is a plain JSON array of chat messages, or an object
// {"messages":[...],"summary":"..."}. Messages are folded into steps as
// AddMessage would, and a summary becomes a SummaryStep after the system
// prompts. Errors wrap ErrInvalid.
func DecodeSnapshot(data []byte) (*Snapshot, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, invalidf("snapshot", "is empty")
	}
	if !utf8.Valid(data) {
		return nil, invalidf("snapshot", "is not valid UTF-8")
	}
	if data[0] == '[' {
		var msgs []Message
		if err := json.Unmarshal(data, &msgs); err != nil {
			return nil, jsonInvalid("messages", err)
		}
		return snapshotFromMessages(msgs, "")
	}
	var probe struct {
		Version  *int            `json:"version"`
		Messages json.RawMessage `json:"messages"`
		Summary  *string         `json:"summary"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, jsonInvalid("snapshot", err)
	}
	if probe.Version == nil {
		if probe.Messages == nil {
			return nil, invalidf("snapshot", "has neither a version nor messages")
		}
		var msgs []Message
		if err := json.Unmarshal(probe.Messages, &msgs); err != nil {
			return nil, jsonInvalid("messages", err)
		}
		summary := ""
		if probe.Summary != nil {
			summary = *probe.Summary
		}
		return snapshotFromMessages(msgs, summary)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		return nil, jsonInvalid("snapshot", err)
	}
	if s.Version != SnapshotVersion {
		return nil, invalidf("version", "unsupported snapshot version %d (this build reads %d)", s.Version, SnapshotVersion)
	}
	if s.Pending != nil {
		if err := validateToolCalls("pending.tool_calls", s.Pending.ToolCalls); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

func snapshotFromMessages(msgs []Message, summary string) (*Snapshot, error) {
	steps, err := StepsFromMessages(msgs)
	if err != nil {
		return nil, err
	}
	if err := validText("summary", summary); err != nil {
		return nil, err
	}
	if summary != "" {
		at := 0
		for at < len(steps) && steps[at].Kind() == KindSystemPrompt {
			at++
		}
		sum := &SummaryStep{StepInfo: StepInfo{Number: len(steps), ID: NewID()}, Summary: summary}
		steps = append(steps[:at], append([]Step{sum}, steps[at:]...)...)
	}
	return &Snapshot{Version: SnapshotVersion, NextNumber: len(steps), Steps: steps}, nil
}
