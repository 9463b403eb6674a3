// Package rowcodec encodes the fields of a fact that SQL backends keep as
// opaque values: the embedding as a blob, the metadata and the states of
// audit entries as JSON.
package rowcodec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/agentmem/agentmem/facts"
)

// Vector encodes v as little-endian float32s; nil for an empty vector.
func Vector(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector decodes what Vector encoded; nil for an empty blob.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("embedding blob of %d bytes is not a float32 vector", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// Metadata encodes md as a JSON object; nil for an empty map.
func Metadata(md map[string]string) ([]byte, error) {
	if len(md) == 0 {
		return nil, nil
	}
	return json.Marshal(md)
}

// DecodeMetadata decodes what Metadata encoded; nil for an empty value.
func DecodeMetadata(b []byte) (map[string]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var md map[string]string
	if err := json.Unmarshal(b, &md); err != nil {
		return nil, fmt.Errorf("fact metadata: %w", err)
	}
	if len(md) == 0 {
		return nil, nil
	}
	return md, nil
}

// State encodes an audit entry's state as a JSON object; nil (SQL NULL)
// for nil.
func State(st *facts.FactState) (any, error) {
	if st == nil {
		return nil, nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// DecodeState decodes what State encoded; nil for an empty value.
func DecodeState(b []byte) (*facts.FactState, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var st facts.FactState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("audit state: %w", err)
	}
	return &st, nil
}
