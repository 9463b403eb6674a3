package agentmem

import (
	"fmt"
	"time"

	"github.com/agentmem/agentmem/tokenizer"
)

// A Replica is a read-only copy of a working set that a log keeps: the
// steps of a session under the numbers its log gave them. It answers
// what a Memory answers about its working set (Context, with budgets and
// strategies, Messages, Tokens, Steps, OpenActions and the like) with the
// same code, and caches each step's rendering and count per format and
// counter as a Memory does. So a process that follows a log renders and
// counts a step once, however many contexts show it.
//
// A Replica cannot be appended to or compacted: it changes only as the
// log it mirrors does. Put adds a step the log appended, Replace puts an
// amendment's copies in place of the steps they stand in for, and Reset
// replaces the whole working set, after a compaction that reorders it.
// None of them numbers, stamps or records anything: the steps come
// numbered, with their IDs and times, and stay as given.
//
// A Replica is safe for concurrent use. Readers see each change whole.
type Replica struct {
	workingSet
}

// ReplicaOptions configures a Replica. The zero value means the OpenAI
// format, o200k_base token counts, the system clock and DefaultPinning,
// as for a Memory.
type ReplicaOptions struct {
	// Format is the default rendering format; nil means OpenAI.
	Format Format
	// Counter is the default token counter; nil means o200k_base.
	Counter tokenizer.Counter
	// Pinning chooses the steps that are pinned (see Options.Pinning):
	// those of the log's session. Nil means DefaultPinning.
	Pinning *Pinning
	// Clock returns the current time, which strategies read (Env); nil
	// means time.Now.
	Clock func() time.Time
}

// NewReplica returns a Replica of the working set steps: numbered steps,
// in order, as a log's working set holds them. It holds copies of them.
// The steps are checked first: a nil or invalid step, or a number that is
// negative or repeated, is an error wrapping ErrInvalid.
//
// Steps are counted lazily, when a context first shows them.
func NewReplica(steps []Step, opts ReplicaOptions) (*Replica, error) {
	r := &Replica{}
	r.init(opts.Format, opts.Counter, opts.Pinning, opts.Clock)
	if err := r.Reset(steps); err != nil {
		return nil, err
	}
	return r, nil
}

// Put adds a copy of a step the log appended at the end of the working
// set, under its number, and reports whether it did. The number must be
// above those of the steps the replica holds or held (NextNumber), since
// a log appends in order. A step the replica holds already, with the
// number and ID of one of its steps, is left as it is and Put reports
// false: the log's entry was mirrored before. A nil or invalid step, or
// one numbered out of order, is an error wrapping ErrInvalid, and nothing
// changes.
//
// The step is counted in the default format and counter before Put
// returns, as Memory.Add counts it.
func (m *Replica) Put(s Step) (bool, error) {
	if s == nil {
		return false, invalidf("step", "is nil")
	}
	if err := s.Validate(); err != nil {
		return false, err
	}
	info := s.Info()
	m.mu.RLock()
	held, err := m.holds(info)
	m.mu.RUnlock()
	if held || err != nil {
		return false, err
	}
	e := newEntries([]Step{s.clone()}, m.format, m.counter)[0]
	m.mu.Lock()
	defer m.mu.Unlock()
	// Checked again: another Put may have added it meanwhile.
	if held, err := m.holds(info); held || err != nil {
		return false, err
	}
	m.pushLocked(e)
	return true, nil
}

// holds reports whether the replica holds the step with info's number
// and ID, and returns an *InvalidError if it cannot take it: another step
// has its number, or its number is below NextNumber. m.mu must be held.
func (m *Replica) holds(info StepInfo) (bool, error) {
	if i := m.indexOf(info.Number); i >= 0 {
		if m.entries[i].step.Info().ID == info.ID {
			return true, nil
		}
		return false, invalidf("number", "%d is the number of another step of the working set", info.Number)
	}
	if info.Number < m.next {
		return false, invalidf("number", "%d is out of order: the next step's number is at least %d", info.Number, m.next)
	}
	return false, nil
}

// Replace puts copies of copies in place of the steps of the working set
// with their numbers, as a log's amendment does (see Memory.Amend), and
// returns the steps they replaced, in the order of copies. Each copy must
// have the number, ID and kind of a step of the working set. The copies
// are counted anew; the other steps keep their counts. A copy that stands
// in for no step, or for the same step as another, is an *InvalidError,
// and nothing changes.
func (m *Replica) Replace(copies ...Step) ([]Step, error) {
	steps := make([]Step, len(copies))
	for i, s := range copies {
		if s == nil {
			return nil, invalidf(fmt.Sprintf("copies[%d]", i), "is nil")
		}
		if err := s.Validate(); err != nil {
			return nil, err
		}
		steps[i] = s.clone()
	}
	entries := newEntries(steps, m.format, m.counter)
	m.mu.Lock()
	defer m.mu.Unlock()
	at, err := m.locate(steps)
	if err != nil {
		return nil, err
	}
	old := m.replaceLocked(at, entries)
	out := make([]Step, len(old))
	for i, e := range old {
		out[i] = e.step.clone()
	}
	return out, nil
}

// Reset makes copies of steps the working set, as NewReplica does: after
// a compaction that reordered the log's working set, the working set the
// log reads. It checks them as NewReplica does, and on an error nothing
// changes. Numbers keep increasing: NextNumber does not go down.
func (m *Replica) Reset(steps []Step) error {
	entries, next, err := numberedEntries(steps, 0)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resetLocked(entries, next)
	return nil
}
