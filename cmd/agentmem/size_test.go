package main

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "-1": -1, "1048576": 1 << 20, "256MiB": 256 << 20, "256mib": 256 << 20,
		"1GiB": 1 << 30, "1.5 GiB": 3 << 29, "500MB": 500_000_000, "2kb": 2000, "64KiB": 64 << 10,
		"10B": 10, " 3 TB ": 3e12,
	} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "ten MiB", "-1MiB", "1.5", "12 parsecs", "1e30GiB", "NaNGiB", "0x10"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
	for n, want := range map[int64]string{128 << 20: "128MiB", 1 << 30: "1GiB", 1000: "1000", -1: "-1", 0: "0", 1536: "1536"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
