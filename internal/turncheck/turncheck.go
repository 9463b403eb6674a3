// Package turncheck checks what a context shows of a working set against
// the rules of fitting (see agentmem.Memory.Context), for the tests of
// every surface that serves contexts: the library, the HTTP API, the
// items routes and the proxy.
package turncheck

import (
	"fmt"

	"github.com/agentmem/agentmem"
)

// Check checks the step numbers a context shows (shown, in order), and
// those of the steps it reports dropped and pending. It checks them
// against the working set the context was fitted from (steps) under
// pinning pin:
//
//   - every pinned step is shown, and steps keep their order;
//   - a step shown that is not pinned has its turn's question shown too
//     (agentmem.StartsTurn), unless that question is pinned;
//   - of each turn, the steps shown (but its question) are its newest;
//   - the turns newer than one shown in part are shown whole;
//   - a pending step is never shown, and every step is shown, dropped or
//     pending.
//
// dropped is the number of steps the context reports dropped.
func Check(pin agentmem.Pinning, steps []agentmem.Step, shown []int, dropped int) error {
	kinds := make([]agentmem.StepKind, len(steps))
	pos := make(map[int]int, len(steps))
	for i, s := range steps {
		kinds[i] = s.Kind()
		pos[s.Info().Number] = i
	}
	pinned := pin.Flags(kinds)
	isShown := make([]bool, len(steps))
	for k, n := range shown {
		i, ok := pos[n]
		if !ok {
			return fmt.Errorf("step %d shown is not in the working set", n)
		}
		if k > 0 && i <= pos[shown[k-1]] {
			return fmt.Errorf("steps out of order: %v", shown)
		}
		isShown[i] = true
	}
	pending := 0
	for i, s := range steps {
		if agentmem.IsPending(s) {
			pending++
			if isShown[i] {
				return fmt.Errorf("pending step %d shown", s.Info().Number)
			}
		}
		if pinned[i] && !isShown[i] {
			return fmt.Errorf("pinned step %d (%s) not shown: %v", s.Info().Number, s.Kind(), shown)
		}
	}
	if len(shown)+dropped+pending != len(steps) {
		return fmt.Errorf("shown %d + dropped %d + pending %d != %d steps", len(shown), dropped, pending, len(steps))
	}
	// Walk the turns newest first.
	whole := true // every turn newer than this one was shown whole
	for end := len(steps) - 1; end >= 0; {
		q := end
		for q >= 0 && !agentmem.StartsTurn(steps[q]) {
			q--
		}
		from := max(q+1, 0) // the turn's steps but its question
		gap, some := false, false
		for i := end; i >= from; i-- {
			if pinned[i] || agentmem.IsPending(steps[i]) {
				continue
			}
			switch {
			case isShown[i] && gap:
				return fmt.Errorf("turn of step %d: step %d shown after an older one was dropped: %v", q, steps[i].Info().Number, shown)
			case isShown[i]:
				some = true
			default:
				gap = true
			}
		}
		askedShown := q >= 0 && !pinned[q] && isShown[q]
		if q >= 0 && !pinned[q] {
			if some && !isShown[q] {
				return fmt.Errorf("steps of the turn of step %d shown without its question: %v", steps[q].Info().Number, shown)
			}
			gap = gap || !isShown[q]
		}
		if (some || askedShown) && !whole {
			return fmt.Errorf("the turn of step %d is shown after a newer turn was not shown whole: %v", q, shown)
		}
		whole = whole && !gap
		end = q - 1
	}
	return nil
}

// NewestQuestion checks that a context shows the newest question of the
// working set, if it has one.
func NewestQuestion(steps []agentmem.Step, shown []int) error {
	for i := len(steps) - 1; i >= 0; i-- {
		if agentmem.StartsTurn(steps[i]) {
			n := steps[i].Info().Number
			for _, s := range shown {
				if s == n {
					return nil
				}
			}
			return fmt.Errorf("the newest question, step %d, is not shown: %v", n, shown)
		}
	}
	return nil
}
