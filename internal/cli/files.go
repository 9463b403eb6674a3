package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// AtomicFile is a file that appears at its path complete or not at all. It
// is written to a temporary file in the same directory and renamed into
// place by Commit. So a command that fails half-way leaves no half-written
// output behind.
type AtomicFile struct {
	*os.File
	path string
}

// CreateAtomic creates the temporary file of path (mode 0600).
func CreateAtomic(path string) (*AtomicFile, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	return &AtomicFile{File: tmp, path: path}, nil
}

// Commit makes the file durable and renames it into place.
func (f *AtomicFile) Commit() error {
	if err := f.Sync(); err != nil {
		f.Abort()
		return err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), f.path); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}

// Abort removes the temporary file.
func (f *AtomicFile) Abort() {
	_ = f.Close()
	_ = os.Remove(f.Name())
}

// StartCPUProfile starts a CPU profile to path, if set, and returns the
// function that stops it.
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	file, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(file); err != nil {
		file.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return file.Close()
	}, nil
}

// WriteHeapProfile writes a heap profile to path, after a garbage
// collection.
func WriteHeapProfile(path string) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}
