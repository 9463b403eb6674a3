package storekit

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// CheckCompaction checks a validated compaction record against the session's
// log before an append. Every sequence number in Working must name a step
// entry of the session's visible log (lookup returns it). Every Replaced copy
// must have the ID and kind of the step it stands in for. The copies of an
// amendment must stand in for steps of the session's working set: for one,
// lookup must return only those (see InWorkingSet). Backends call it after
// store.ValidateAppend, with lookup reading the log as it is before the
// append. Errors wrap ErrInvalid.
func CheckCompaction(c *store.CompactionRecord, lookup func(seq int64) (agentmem.Step, bool)) error {
	if c.Amend {
		for i, s := range c.Replaced {
			n := int64(s.Info().Number)
			f := fmt.Sprintf("compaction.replaced[%d]", i)
			o, ok := lookup(n)
			if !ok {
				return invalid(f+".number", "%d is not the sequence number of a step of the session's working set: an amendment replaces steps the working set has", n)
			}
			if o.Info().ID != s.Info().ID || o.Kind() != s.Kind() {
				return invalid(f, "is not a copy of step %d (the ID or kind differs)", n)
			}
		}
		return nil
	}
	orig := make(map[int64]agentmem.Step, len(c.Working))
	for i, ref := range c.Working {
		if ref < 0 {
			continue
		}
		s, ok := lookup(ref)
		if !ok {
			return invalid(fmt.Sprintf("compaction.working[%d]", i), "%d is not the sequence number of a step in the session's log", ref)
		}
		orig[ref] = s
	}
	for i, s := range c.Replaced {
		n := int64(s.Info().Number)
		o := orig[n]
		if o == nil || o.Info().ID != s.Info().ID || o.Kind() != s.Kind() {
			return invalid(fmt.Sprintf("compaction.replaced[%d]", i), "is not a copy of step %d (the ID or kind differs)", n)
		}
	}
	return nil
}

// ResolveCompaction returns a copy of a compaction record with every
// store.NewStepRef(i) in Working replaced by seqs[i], the sequence number the
// append gave (or found for) Steps[i]. It refuses a result that names a
// step twice (a new step that was already stored under a number Working
// also names). The steps are shared, not copied.
func ResolveCompaction(c *store.CompactionRecord, seqs []int64) (*store.CompactionRecord, error) {
	out := &store.CompactionRecord{
		Amend:    c.Amend,
		Working:  make([]int64, len(c.Working)),
		Replaced: append([]agentmem.Step(nil), c.Replaced...),
		Removed:  append([]int64(nil), c.Removed...),
	}
	seen := make(map[int64]bool, len(c.Working))
	for i, ref := range c.Working {
		if ref < 0 {
			k := -ref - 1
			if k >= int64(len(seqs)) {
				return nil, invalid(fmt.Sprintf("compaction.working[%d]", i), "store.NewStepRef(%d) but the request has %d steps", k, len(seqs))
			}
			ref = seqs[k]
		}
		if seen[ref] {
			return nil, invalid(fmt.Sprintf("compaction.working[%d]", i), "step %d is named twice", ref)
		}
		seen[ref] = true
		out.Working[i] = ref
	}
	return out, nil
}

// WorkingStep is a step of a working set as CheckPinned sees it: its
// sequence number and its kind.
type WorkingStep struct {
	Seq  int64
	Kind agentmem.StepKind
}

// CheckPinned checks that a compaction loses no pinned step by accident.
// ws is the working set it compacts: the session's working set before
// the append (see store.WorkingSet), followed by the append's new steps, with
// their sequence numbers; c is the record with its NewStepRefs resolved
// (ResolveCompaction). The pinned steps are the library's
// (agentmem.PinnedKinds: every system prompt and the first task). Each
// must stay in c.Working, itself or as a modified copy, or be named in
// c.Removed: a pinned step leaves the working set only when the record
// says so. Records made by the library always do: its Compaction lists
// every step that left, and agentmem.Memory.Clear removes them all. So a
// clear, or a strategy that drops a pinned step on purpose such as
// agentmem.KeepSystemAndRecent, is stored. A record that merely leaves the
// system prompt or the task out of its working list is refused.
//
// Backends call it in the append's transaction, so no other append comes
// between the working set it checks and the record stored. Errors wrap
// ErrInvalid.
func CheckPinned(c *store.CompactionRecord, ws []WorkingStep) error {
	kinds := make([]agentmem.StepKind, len(ws))
	for i, w := range ws {
		kinds[i] = w.Kind
	}
	var kept map[int64]bool
	for i, pinned := range agentmem.PinnedKinds(kinds) {
		if !pinned {
			continue
		}
		if kept == nil {
			kept = make(map[int64]bool, len(c.Working)+len(c.Removed))
			for _, n := range c.Working {
				kept[n] = true
			}
			for _, n := range c.Removed {
				kept[n] = true // not kept, but removed on purpose
			}
		}
		if !kept[ws[i].Seq] {
			what := "the first task"
			if ws[i].Kind == agentmem.KindSystemPrompt {
				what = "a system prompt"
			}
			return invalid("compaction.working", "leaves out step %d, %s of the working set, which is pinned: a compaction keeps every system prompt and the first task (a modified copy may stand in for one), unless its removed list names the step", ws[i].Seq, what)
		}
	}
	return nil
}

// KindPrefixBytes is how much of a stored step's encoding EncodedKind
// needs when the encoding starts with the step's type, as store.EncodeStep
// writes it: a database backend reads only these first bytes of each
// step of a working set to check a compaction.
const KindPrefixBytes = 32

// kindPrefix is how store.EncodeStep starts a step's encoding.
var kindPrefix = []byte(`{"type":"`)

// EncodedKind returns the kind of an encoded step (store.EncodeStep) from the
// start of its encoding: the first KindPrefixBytes bytes are enough when
// it starts with the type, as store.EncodeStep writes it; other encodings must
// be whole, and are decoded. Errors wrap ErrInvalid.
func EncodedKind(b []byte) (agentmem.StepKind, error) {
	if rest, ok := bytes.CutPrefix(b, kindPrefix); ok {
		if i := bytes.IndexByte(rest, '"'); i > 0 {
			k := agentmem.StepKind(rest[:i])
			if slices.Contains(agentmem.Kinds(), k) {
				return k, nil
			}
		}
	}
	s, err := store.DecodeStep(b)
	if err != nil {
		return "", fmt.Errorf("reading a stored step's kind: %w", err)
	}
	return s.Kind(), nil
}

// invalid returns the error of a field of a request: an
// *agentmem.InvalidError, which wraps agentmem.ErrInvalid.
func invalid(field, format string, args ...any) error {
	return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
