package load

import (
	"encoding/json"
	"math"
	"testing"
)

// Percentiles of the lag histogram are bucket bounds in milliseconds, and
// one above the largest bucket is -1, which JSON can carry (+Inf made the
// report fail to print).
func TestLagBetween(t *testing.T) {
	before := lagHistogram{0.1: 10, 1: 10, 60: 10, math.Inf(1): 10}
	after := lagHistogram{0.1: 60, 1: 100, 60: 109, math.Inf(1): 110}
	n, p50, p99 := lagBetween(before, after)
	if n != 100 || p50 != 100 || p99 != 60000 {
		t.Fatalf("n %d, p50 %v, p99 %v", n, p50, p99)
	}
	after[math.Inf(1)] = 130 // 20 changes waited more than 60 s
	n, _, p99 = lagBetween(before, after)
	if n != 120 || p99 != -1 {
		t.Fatalf("n %d, p99 %v; want 120, -1", n, p99)
	}
	if _, err := json.Marshal(IndexLag{Changes: n, P99: p99}); err != nil {
		t.Fatal(err)
	}
}
