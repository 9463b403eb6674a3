package httpbody

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// Read reads what io.ReadAll reads, whatever the declared length says,
// into a buffer sized for the declared length when it is at most presize.
func TestRead(t *testing.T) {
	body := strings.Repeat("x", 4000)
	const presize = 1 << 20
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
		for _, r := range []io.Reader{strings.NewReader(body), iotest.OneByteReader(strings.NewReader(body)), iotest.DataErrReader(strings.NewReader(body))} {
			got, err := Read(r, c.declared, presize)
			if err != nil || string(got) != body {
				t.Errorf("%s: read %d bytes, %v; want the %d bytes", c.name, len(got), err, len(body))
			}
			// At most the declared length (within presize) or what io.ReadAll
			// would grow to, with the allocator's rounding.
			bound := 2 * len(body)
			if c.declared > 0 && c.declared <= presize {
				bound = max(bound, int(c.declared)+1)
			}
			if cap(got) > bound+bound/8 {
				t.Errorf("%s: a buffer of %d bytes for %d", c.name, cap(got), len(body))
			}
		}
	}
	boom := errors.New("boom")
	if got, err := Read(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), 10, presize); !errors.Is(err, boom) || string(got) != "abc" {
		t.Errorf("a failing reader: %q, %v; want what was read and its error", got, err)
	}
	// With the length declared, it allocates once where io.ReadAll
	// grows its buffer again and again.
	r := strings.NewReader(body)
	ours := testing.AllocsPerRun(100, func() { r.Reset(body); _, _ = Read(r, 4000, presize) })
	theirs := testing.AllocsPerRun(100, func() { r.Reset(body); _, _ = io.ReadAll(r) })
	if ours > 1 || ours >= theirs {
		t.Errorf("Read allocated %v times for a body of 4000 bytes, io.ReadAll %v", ours, theirs)
	}
}
