package recall

import (
	"encoding/binary"
	"fmt"
	"math"
)

// EncodeVector encodes a vector as the database backends store it:
// little-endian IEEE 754 float32s, 4 bytes each.
func EncodeVector(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector decodes what EncodeVector wrote. A length that is not a
// multiple of 4, or a value that is not finite, is an error.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("recall: vector of %d bytes is not a whole number of float32s", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(v[i])) || math.IsInf(float64(v[i]), 0) {
			return nil, fmt.Errorf("recall: vector value %d is not finite", i)
		}
	}
	return v, nil
}

// Cosine returns the cosine similarity of two vectors of one dimension,
// and 0 if either is zero.
func Cosine(a, b []float32) float64 {
	na, nb := norm(a), norm(b)
	if na == 0 || nb == 0 || len(a) != len(b) {
		return 0
	}
	return dot(a, b) / (na * nb)
}

// Norm returns a vector's Euclidean norm.
func Norm(v []float32) float64 { return norm(v) }

// Dot returns the dot product of two vectors of one dimension.
func Dot(a, b []float32) float64 { return dot(a, b) }
