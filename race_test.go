//go:build race

package agentmem_test

// raceEnabled is true under the race detector, where heavy tests use
// smaller samples: they hunt data races there, not invariant violations.
const raceEnabled = true
