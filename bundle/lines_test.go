package bundle

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
)

// TestDecoderLineLimit: the version 2 decoder allows max bytes a line
// besides its line ending and stops at the first longer line, naming it,
// however long it is.
func TestDecoderLineLimit(t *testing.T) {
	in := "abc\r\n" + strings.Repeat("x", 10) + "\r\n" + strings.Repeat("y", 200_000) + "\nlast\n"
	d := newDecoder(strings.NewReader(in), 10)
	for _, want := range []string{"abc", strings.Repeat("x", 10)} {
		b, err := d.readLine()
		if err != nil || string(b) != want {
			t.Fatalf("readLine = %q, %v; want %q", b, err, want)
		}
	}
	_, err := d.readLine()
	var inv *agentmem.InvalidError
	if !errors.As(err, &inv) || inv.Field != "line 3" || !strings.Contains(inv.Reason, "longer than 10 bytes") {
		t.Fatalf("the long line: %v, want line 3 longer than 10 bytes", err)
	}
	if d.read > 64<<10+20 {
		t.Errorf("read %d bytes: it read on through the long line", d.read)
	}
}

// TestSplitterLineLimit: the version 1 splitter allows max bytes a line,
// its newline included (as store.Import does); it drops a longer line,
// counted, and reads on after it.
func TestSplitterLineLimit(t *testing.T) {
	long := strings.Repeat("y", 200_000)
	in := "short\n" + strings.Repeat("x", 10) + "\n" + long + "\nnext\n" + long
	sp := newExportSplitter(strings.NewReader(in), 10)
	for i, want := range []struct {
		line string
		err  error
		n    int
	}{{"short\n", nil, 1}, {"", errLineTooLong, 2}, {"", errLineTooLong, 3}, {"next\n", nil, 4}, {"", errLineTooLong, 5}, {"", io.EOF, 5}} {
		b, err := sp.readLine()
		if string(b) != want.line || err != want.err || sp.line != want.n {
			t.Fatalf("readLine %d = %q, %v at line %d; want %q, %v at line %d", i, b, err, sp.line, want.line, want.err, want.n)
		}
	}
	if sp.read != int64(len(in)) {
		t.Errorf("read %d bytes of %d", sp.read, len(in))
	}
}
