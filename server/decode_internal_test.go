package server

import (
	"io"
	"strings"
	"testing"
)

// readAll reads what io.ReadAll reads, whatever the declared length
// says, into a buffer sized for the declared length (bounded) rather than
// grown by doubling.
func TestReadAll(t *testing.T) {
	body := strings.Repeat("x", 4000)
	for _, c := range []struct {
		name     string
		declared int64
	}{
		{"exact", 4000},
		{"unknown", -1},
		{"none", 0},
		{"short claim", 100},
		{"long claim", 100_000},
		{"huge claim", 1 << 40},
	} {
		got, err := readAll(strings.NewReader(body), c.declared)
		if err != nil || string(got) != body {
			t.Errorf("%s: read %d bytes, %v; want the %d bytes", c.name, len(got), err, len(body))
		}
		if cap(got) > 2*maxPresize {
			t.Errorf("%s: a buffer of %d bytes, past maxPresize", c.name, cap(got))
		}
	}
	// With the length declared, it allocates once where io.ReadAll
	// grows its buffer again and again.
	r := strings.NewReader(body)
	ours := testing.AllocsPerRun(100, func() { r.Reset(body); _, _ = readAll(r, 4000) })
	theirs := testing.AllocsPerRun(100, func() { r.Reset(body); _, _ = io.ReadAll(r) })
	if ours > 1 || ours >= theirs {
		t.Errorf("readAll allocated %v times for a body of 4000 bytes, io.ReadAll %v", ours, theirs)
	}
}
