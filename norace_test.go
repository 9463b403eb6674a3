//go:build !race

package agentmem_test

const raceEnabled = false
