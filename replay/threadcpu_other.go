//go:build !linux

package replay

import "time"

// threadCPU is not measured on this platform.
func threadCPU() (time.Duration, bool) { return 0, false }
