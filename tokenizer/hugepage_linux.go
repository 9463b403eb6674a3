package tokenizer

import (
	"syscall"
	"unsafe"
)

// adviseHugePages asks Linux to back the whole 2 MB pages inside the
// memory of s with transparent huge pages, before anything is written to
// it. A vocabulary's hash table is megabytes of fresh memory. Faulting it
// in 4 kB pages is much of an encoding's first use; in huge pages it is a
// few faults. It is only advice: with transparent huge pages off, or
// memory the heap has already mapped, nothing changes.
func adviseHugePages[T any](s []T) {
	if cap(s) == 0 {
		return
	}
	var zero T
	size := uintptr(cap(s)) * unsafe.Sizeof(zero)
	const huge = 2 << 20
	if size < huge {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	lo := (p + huge - 1) &^ (huge - 1)
	hi := (p + size) &^ (huge - 1)
	if lo >= hi {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), size)
	_ = syscall.Madvise(b[lo-p:hi-p], syscall.MADV_HUGEPAGE)
}
