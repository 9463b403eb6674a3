//go:build !linux

package tokenizer

// adviseHugePages does nothing outside Linux; see hugepage_linux.go.
func adviseHugePages[T any](s []T) {}
