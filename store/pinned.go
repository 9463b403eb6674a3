package store

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/agentmem/agentmem"
)

// WorkingStep is a step of a working set as CheckPinned sees it: its
// sequence number and its kind.
type WorkingStep struct {
	Seq  int64
	Kind agentmem.StepKind
}

// CheckPinned checks that a compaction loses no pinned step by accident.
// ws is the working set it compacts: the session's working set before
// the append (see WorkingSet), followed by the append's new steps, with
// their sequence numbers; c is the record with its NewStepRefs resolved
// (ResolveCompaction). The pinned steps are the library's
// (agentmem.PinnedKinds: every system prompt and the first task). Each
// must stay in c.Working, itself or as a modified copy, or be named in
// c.Removed: a pinned step leaves the working set only when the record
// says so. Records made by the library always do (its Compaction lists
// every step that left, and agentmem.Memory.Clear removes them all), so a
// strategy that drops a pinned step on purpose, such as
// agentmem.KeepSystemAndRecent, or a clear, is stored, while a record
// that merely leaves the system prompt or the task out of its working
// list is refused.
//
// Backends call it in the append's transaction, so no other append comes
// between the working set it checks and the record stored. Errors wrap
// ErrInvalid.
func CheckPinned(c *CompactionRecord, ws []WorkingStep) error {
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
// needs when the encoding starts with the step's type, as EncodeStep
// writes it: a database backend reads only these first bytes of each
// step of a working set to check a compaction.
const KindPrefixBytes = 32

// kindPrefix is how EncodeStep starts a step's encoding.
var kindPrefix = []byte(`{"type":"`)

// EncodedKind returns the kind of an encoded step (EncodeStep) from the
// start of its encoding: the first KindPrefixBytes bytes are enough when
// it starts with the type, as EncodeStep writes it; other encodings must
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
	s, err := DecodeStep(b)
	if err != nil {
		return "", fmt.Errorf("reading a stored step's kind: %w", err)
	}
	return s.Kind(), nil
}
