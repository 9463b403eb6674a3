package replay

import (
	"math"
	"slices"
	"time"
)

// percentiles returns the median, 99th percentile and maximum of ds in
// microseconds, by the nearest-rank method. ds is sorted in place.
func percentiles(ds []time.Duration) (median, p99, maximum float64) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return micros(rank(0.50)), micros(rank(0.99)), micros(ds[len(ds)-1])
}

// micros returns d in microseconds, rounded to 0.1 µs.
func micros(d time.Duration) float64 { return round(float64(d)/1e3, 1) }

// seconds returns d in seconds, rounded to the microsecond.
func seconds(d time.Duration) float64 { return round(d.Seconds(), 6) }

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
