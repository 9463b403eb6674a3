package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteSize is a flag value of a size in bytes, as in 256MiB or "1.5 GB".
// It is a whole number of bytes, or a number with a unit: B, KB, MB, GB,
// TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024). A negative
// number of bytes (such as -1) is kept as it is, for flags where it
// means "none".
type byteSize int64

// sizeUnits are the units of byteSize, longest first so that "MiB" is not
// read as "B".
var sizeUnits = []struct {
	name string
	mult float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"b", 1},
}

// parseSize reads a byteSize.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n, nil
	}
	for _, u := range sizeUnits {
		num, ok := strings.CutSuffix(t, u.name)
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) || x*u.mult >= math.MaxInt64 {
			break
		}
		return int64(x * u.mult), nil
	}
	return 0, fmt.Errorf("%q is not a size: use bytes or a number with a unit such as 256MiB, 1GiB or 500MB", s)
}

func (b *byteSize) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) String() string { return formatSize(int64(*b)) }

// Type names the value in the flags' help.
func (*byteSize) Type() string { return "size" }

// formatSize writes n in the largest binary unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n > 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}
