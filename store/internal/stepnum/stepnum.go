// Package stepnum finds the number in a step's log encoding. The store
// renumbers an encoded step, or takes its number out, without encoding
// it again.
package stepnum

import "github.com/agentmem/agentmem"

// Find returns where the number of enc starts and ends. enc is a step of
// kind as store.EncodeStep writes it, the type and the number first:
// enc[:i] is {"type":"<kind>","number":, enc[i:j] the number, and enc[j:]
// the rest. On any other shape Find reports false, and the caller encodes
// the step again.
func Find(enc []byte, kind agentmem.StepKind) (i, j int, ok bool) {
	const open, sep = `{"type":"`, `","number":`
	k := len(open) + len(kind)
	i = k + len(sep)
	if len(enc) < i || string(enc[:len(open)]) != open || string(enc[len(open):k]) != string(kind) || string(enc[k:i]) != sep {
		return 0, 0, false
	}
	j = i
	if j < len(enc) && enc[j] == '-' {
		j++
	}
	digits := j
	for j < len(enc) && enc[j] >= '0' && enc[j] <= '9' {
		j++
	}
	if j == digits || j == len(enc) || (enc[j] != ',' && enc[j] != '}') {
		return 0, 0, false
	}
	return i, j, true
}
