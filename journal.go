package agentmem

import "context"

// A Journal durably records what happens to a memory. Package store
// implements it over a session's append-only log. So a memory bound to a
// session writes through on every change and can be reloaded after a crash
// with nothing lost or repeated.
//
// The journal, not the memory, numbers the steps. A memory with a journal
// gives each step the number the journal returns (the session's sequence
// number), so several writers of one session never reuse a number. A
// journal call that fails leaves the memory unchanged.
type Journal interface {
	// Append durably records steps at the end of the log, in order, and
	// returns the number it gave each one. Steps carry their IDs and times.
	Append(ctx context.Context, steps []Step) ([]int, error)
	// Compact durably records a compaction in one atomic write. It appends
	// the new steps: Working[i] for i in Added, which carry IDs but no
	// numbers yet. It records that the working set becomes exactly Working,
	// in order. Modified copies (Working[i] for i in Replaced) are stored in
	// place of their originals. It returns the numbers given to the new
	// steps, in the order of Added.
	Compact(ctx context.Context, c JournalCompaction) ([]int, error)
}

// JournalCompaction is a compaction as a Journal records it.
type JournalCompaction struct {
	// Working is the whole working set after the compaction, in order.
	Working []Step
	// Added are the indexes in Working of steps the compaction created.
	Added []int
	// Replaced are the indexes in Working of modified copies of steps.
	Replaced []int
	// Removed are the numbers of the steps that left the working set.
	Removed []int
}
