//go:build linux

package replay

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time the calling OS thread has used. Read
// around a call on a goroutine locked to its thread, it measures the
// call's own work. Time the thread spent descheduled (other processes on a
// busy machine) is not counted; a GC assist the call made is.
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
