//go:build !unix

package replay

import "time"

// peakRSSMB is not measured on this platform.
func peakRSSMB() float64 { return 0 }

// cpuTime is not measured on this platform.
func cpuTime() time.Duration { return 0 }
