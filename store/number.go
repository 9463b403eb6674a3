package store

import (
	"github.com/agentmem/agentmem"
)

// WithNumber returns a copy of s whose number is n: how a backend gives a
// step its sequence number (Entry.Step.Info().Number == Entry.Seq).
func WithNumber(s agentmem.Step, n int64) agentmem.Step {
	info := s.Info()
	info.Number = int(n)
	return agentmem.WithInfo(s, info)
}

// Normalize returns the step as a backend stores it: numbered n and
// passed through EncodeStep and DecodeStep, so that what a store returns
// is exactly what its JSON says (no monotonic clock reading, no time zone
// name, compacted structured data), on every backend alike. It also
// returns the encoding, which is what a database backend stores.
func Normalize(s agentmem.Step, n int64) (agentmem.Step, []byte, error) {
	b, err := EncodeStep(WithNumber(s, n))
	if err != nil {
		return nil, nil, err
	}
	out, err := DecodeStep(b)
	if err != nil {
		return nil, nil, err
	}
	return out, b, nil
}
