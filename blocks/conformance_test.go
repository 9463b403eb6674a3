package blocks_test

import (
	"testing"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/blocks/blockstest"
)

func TestConformance(t *testing.T) {
	blockstest.Run(t, blockstest.Config{New: func(*testing.T) blocks.Store { return blocks.NewMemStore() }})
}
