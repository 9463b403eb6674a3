package recall

import (
	"math"
	"slices"
	"testing"
)

func TestVectorRoundTrip(t *testing.T) {
	v := []float32{0, 1.5, -2.25, math.MaxFloat32, math.SmallestNonzeroFloat32}
	got, err := DecodeVector(EncodeVector(v))
	if err != nil || !slices.Equal(got, v) {
		t.Errorf("round trip = %v, %v", got, err)
	}
	if _, err := DecodeVector([]byte{1, 2, 3}); err == nil {
		t.Error("3 bytes decoded")
	}
	if _, err := DecodeVector(EncodeVector([]float32{float32(math.NaN())})); err == nil {
		t.Error("NaN decoded")
	}
	if got := Cosine([]float32{1, 0}, []float32{1, 1}); math.Abs(got-1/math.Sqrt2) > 1e-12 {
		t.Errorf("Cosine = %v", got)
	}
}

// FuzzDecodeVector checks that any bytes decode to a finite vector that
// encodes back to them, or fail.
func FuzzDecodeVector(f *testing.F) {
	f.Add(EncodeVector([]float32{1, -2, 0.5}))
	f.Add([]byte{0, 0, 192, 127}) // NaN
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeVector(data)
		if err != nil {
			return
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("decoded %v", x)
			}
		}
		if !slices.Equal(EncodeVector(v), data) && len(data) > 0 {
			t.Fatalf("re-encoding differs")
		}
	})
}
