package inspector

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// Amendments (store.CompactionRecord.Amend) are mostly tool results that
// arrived after their call. Frameworks save the call and its result in
// separate requests, so a session of many tool calls has as many
// amendments. The pages show each in the row of the step it completed, not
// as a compaction. A step's row shows the completed step: what the model
// sees.

// versions follows, entry by entry, the versions of the steps of a part of
// a log. A step is seen as logged, as completed by the amendments after it
// (what a step's row shows), and as the working set holds it (a
// compaction's copy, or the completed step). It knows only the steps whose
// entries it was given.
type versions struct {
	logged  map[int64]agentmem.Step
	shown   map[int64]agentmem.Step
	inForce map[int64]agentmem.Step
	enc     map[agentmem.Step][]byte
}

func newVersions() *versions {
	return &versions{logged: map[int64]agentmem.Step{}, shown: map[int64]agentmem.Step{}, inForce: map[int64]agentmem.Step{}, enc: map[agentmem.Step][]byte{}}
}

// step records a step entry.
func (v *versions) step(seq int64, s agentmem.Step) {
	v.logged[seq], v.shown[seq], v.inForce[seq] = s, s, s
}

// amend records an amendment's copy and returns the step it completed as
// it stood before, if known.
func (v *versions) amend(c agentmem.Step) (prev agentmem.Step, known bool) {
	n := int64(c.Info().Number)
	prev, known = v.shown[n]
	if known {
		v.shown[n], v.inForce[n] = c, c
	}
	return prev, known
}

// amended reports whether an amendment changed the step logged at seq.
func (v *versions) amended(seq int64) bool {
	return v.shown[seq] != v.logged[seq]
}

// same reports whether two versions of a step are the same, by their
// encoding.
func (v *versions) same(a, b agentmem.Step) bool {
	if a == b {
		return true
	}
	return bytes.Equal(v.encode(a), v.encode(b))
}

func (v *versions) encode(s agentmem.Step) []byte {
	if b, ok := v.enc[s]; ok {
		return b
	}
	b, err := store.EncodeStep(s)
	if err != nil {
		b = nil
	}
	v.enc[s] = b
	return b
}

// compact records a full compaction record and describes it: the copies it
// carries, by what they are to the versions they replace. A full record's
// copies are the only ones in force after it. So a writer sends again,
// unchanged, the copies the working set already had, such as the completed
// tool calls of a chat. Those are told apart from the copies the
// compaction made.
func (v *versions) compact(c *store.CompactionRecord) *compactionView {
	cv := &compactionView{Working: len(c.Working), Removed: formatSeqs(c.Removed)}
	var shortened, changed, kept, unknown []int64
	copies := make(map[int64]agentmem.Step, len(c.Replaced))
	for _, r := range c.Replaced {
		n := int64(r.Info().Number)
		copies[n] = r
		prev, ok := v.inForce[n]
		switch {
		case !ok:
			unknown = append(unknown, n)
		case v.same(prev, r):
			kept = append(kept, n)
		case len(v.encode(r)) < len(v.encode(prev)):
			shortened = append(shortened, n)
		default:
			changed = append(changed, n)
		}
	}
	// The copies it does not carry apply no more: those steps are as
	// logged again.
	for n := range v.inForce {
		if r, ok := copies[n]; ok {
			v.inForce[n] = r
		} else {
			v.inForce[n] = v.logged[n]
		}
	}
	for _, l := range [][]int64{shortened, changed, kept, unknown} {
		slices.Sort(l)
	}
	cv.Shortened, cv.Changed, cv.Kept, cv.Copies = formatSeqs(shortened), formatSeqs(changed), formatSeqs(kept), formatSeqs(unknown)
	return cv
}

// compactionView is a full compaction record on the pages. It holds the
// size of the working set after it, the steps it removed, and the copies
// it carries, by what they are to the versions they replace (see
// versions.compact).
type compactionView struct {
	Working int
	Removed string
	// Shortened copies are smaller than the version they replace, and
	// Changed ones differ otherwise. Kept ones are that version again
	// (carried over). Copies are of steps whose version in force the page
	// does not know, since their entries are on another page.
	Shortened, Changed, Kept, Copies string
}

// arrivalView is an amendment shown in the row of the step it
// completed.
type arrivalView struct {
	Seq int64
	// Anchor is set on the first row that shows the amendment: it
	// carries the entry's anchor (an amendment may complete several
	// steps).
	Anchor bool
	// Text says what arrived and when, after the step's entry.
	Text string
}

// answered returns the IDs of the calls of a step that have results.
func answered(s agentmem.Step) map[string]bool {
	a, ok := s.(*agentmem.ActionStep)
	if !ok {
		return nil
	}
	out := make(map[string]bool, len(a.Results))
	for _, r := range a.Results {
		out[r.CallID] = true
	}
	return out
}

// callNames names the calls of an action by their tools, in the
// action's order.
func callNames(s agentmem.Step, ids map[string]bool) []string {
	a, ok := s.(*agentmem.ActionStep)
	if !ok {
		return nil
	}
	var out []string
	for _, c := range a.ToolCalls {
		if ids[c.ID] {
			out = append(out, c.Name)
		}
	}
	return out
}

// results says "result of NAME" or "results of A, B".
func results(names []string) string {
	if len(names) == 1 {
		return "result of " + names[0]
	}
	return "results of " + strings.Join(names, ", ")
}

// describeAmendment says what an amendment's copy of a step changed from
// prev, the step as it stood before. That is the results that arrived, or
// that were taken back (sessions.Service.Pop of a tool result).
func describeAmendment(prev, copy agentmem.Step) string {
	before, after := answered(prev), answered(copy)
	arrived, withdrawn := map[string]bool{}, map[string]bool{}
	for id := range after {
		if !before[id] {
			arrived[id] = true
		}
	}
	for id := range before {
		if !after[id] {
			withdrawn[id] = true
		}
	}
	switch {
	case len(arrived) > 0:
		return results(callNames(copy, arrived)) + " arrived"
	case len(withdrawn) > 0:
		return results(callNames(prev, withdrawn)) + " withdrawn"
	}
	return "amended"
}

// describeOffPage says what an amendment's copy of step seq is when the
// step is not on the page. What it was before is then not known.
func describeOffPage(seq int64, copy agentmem.Step) string {
	n := "#" + strconv.FormatInt(seq, 10)
	a, ok := copy.(*agentmem.ActionStep)
	if !ok || len(a.ToolCalls) == 0 {
		return n + " amended"
	}
	if !a.Pending() {
		if len(a.ToolCalls) == 1 {
			return "result of " + n + " arrived"
		}
		return "results of " + n + " arrived"
	}
	return n + " amended: " + strconv.Itoa(len(a.ToolCalls)-len(a.Unanswered())) + " of " + strconv.Itoa(len(a.ToolCalls)) + " calls answered"
}

// formatDelay says how long after its step an amendment came, as
// "+0.3 s", "+12 s", "+2 min 5 s", "+3 h 20 min" or "+4 days".
func formatDelay(d time.Duration) string {
	switch {
	case d < 0:
		return ""
	case d < 100*time.Millisecond:
		return "+" + strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + " ms"
	case d < 10*time.Second:
		return "+" + strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
	case d < time.Minute:
		return "+" + strconv.Itoa(int(d.Round(time.Second).Seconds())) + " s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return "+" + strconv.Itoa(int(d/time.Minute)) + " min " + strconv.Itoa(int(d%time.Minute/time.Second)) + " s"
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		return "+" + strconv.Itoa(int(d/time.Hour)) + " h " + strconv.Itoa(int(d%time.Hour/time.Minute)) + " min"
	}
	return "+" + strconv.Itoa(int(d/(24*time.Hour))) + " days"
}

// arrivalText is what a step's row says of an amendment. It says what
// arrived and how long after the step (when the store keeps entry times).
// For a step a branch inherited, it says that it arrived in the branch.
func arrivalText(what string, step, amend time.Time, inBranch bool) string {
	if inBranch {
		what += " in this branch"
	}
	if !step.IsZero() && !amend.IsZero() {
		if d := formatDelay(amend.Sub(step)); d != "" {
			what += " " + d
		}
	}
	return what
}
