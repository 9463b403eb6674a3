package sqlite

import (
	"bytes"
	"strconv"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// Steps are encoded by the goroutine that calls Append, before the append
// is queued, so that the committer, which runs the appends of every
// goroutine one after the other, only splices each step's sequence
// number into its encoding: JSON encoding is otherwise a large share of
// the committer's time.

// encodeNumbered returns store.EncodeStep(store.WithNumber(st, seq)),
// from pre (st's encoding by store.ValidateAppendEncoded) when it can.
func encodeNumbered(st agentmem.Step, pre []byte, seq int64) ([]byte, error) {
	if b, ok := renumber(pre, st.Kind(), seq); ok {
		return b, nil
	}
	return store.EncodeStep(store.WithNumber(st, seq))
}

// renumber replaces the number of an encoded step with seq. The core
// encodes a step as {"type":"<kind>","number":<n>,...}; if b does not
// start that way, renumber reports false and the caller encodes the step
// again. TestRenumber checks that the result is byte for byte the
// encoding of the numbered step, for every kind of step.
func renumber(b []byte, kind agentmem.StepKind, seq int64) ([]byte, bool) {
	prefix := `{"type":"` + string(kind) + `","number":`
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return nil, false
	}
	rest := b[len(prefix):]
	i := 0
	if i < len(rest) && rest[i] == '-' {
		i++
	}
	j := i
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	if j == i || j == len(rest) || (rest[j] != ',' && rest[j] != '}') {
		return nil, false
	}
	out := make([]byte, 0, len(b)+20)
	out = append(out, prefix...)
	out = strconv.AppendInt(out, seq, 10)
	return append(out, rest[j:]...), true
}
