//go:build !race

package tokenizer

// raceEnabled is true under -race, which makes the tests about 10x slower.
const raceEnabled = false
