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
