package rowcodec

import (
	"math"
	"slices"
	"testing"
)

func TestVectorRoundTrip(t *testing.T) {
	for _, v := range [][]float32{nil, {0}, {1, -2.5, float32(math.Inf(1)), math.SmallestNonzeroFloat32, math.MaxFloat32}} {
		got, err := DecodeVector(Vector(v))
		if err != nil || !slices.Equal(got, v) {
			t.Fatalf("round trip of %v = %v, %v", v, got, err)
		}
	}
	if _, err := DecodeVector([]byte{1, 2, 3}); err == nil {
		t.Fatal("a 3-byte blob decoded")
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	md := map[string]string{"a": "b", "ü": "\"quoted\" <&>"}
	b, err := Metadata(md)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeMetadata(b)
	if err != nil || len(got) != 2 || got["ü"] != md["ü"] {
		t.Fatalf("round trip = %v, %v", got, err)
	}
	if b, _ := Metadata(nil); b != nil {
		t.Fatalf("empty metadata encodes to %q, want nil", b)
	}
	if _, err := DecodeMetadata([]byte("[1]")); err == nil {
		t.Fatal("an array decoded as metadata")
	}
}
