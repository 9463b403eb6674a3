package recall_test

import (
	"testing"

	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/recall/recalltest"
)

// TestConformance runs the recalltest suite on the in-memory backend.
func TestConformance(t *testing.T) {
	recalltest.Run(t, recalltest.Config{
		New: func(*testing.T) recall.Backend { return recall.NewMemory(recall.MemoryOptions{}) },
	})
}
