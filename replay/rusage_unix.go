//go:build unix

package replay

import (
	"runtime"
	"syscall"
	"time"
)

// peakRSSMB returns the process's peak resident set size in MiB, from
// getrusage: Linux and the BSDs report it in KiB, Darwin in bytes.
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	kib := float64(ru.Maxrss)
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		kib /= 1024
	}
	return kib / 1024
}

// cpuTime returns the CPU time (user and system) the process has used so
// far, on all its threads: the garbage collector's work included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
