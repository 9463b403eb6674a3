package facts_test

import (
	"testing"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/factstest"
)

func TestConformance(t *testing.T) {
	factstest.Run(t, factstest.Config{
		New: func(*testing.T) facts.Store { return facts.NewMemStore() },
	})
}
