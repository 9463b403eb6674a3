package bundle

import (
	"bufio"
	"errors"
	"io"
)

// lineReader reads an input line by line, counting the lines and their
// bytes: what both the version 2 decoder and the version 1 splitter read
// with.
type lineReader struct {
	br *bufio.Reader
	// max bounds a line (ImportOptions.MaxLineBytes).
	max int
	// line counts the lines read, those too long included; read counts
	// the bytes read.
	line int
	read int64
	// partial says that the line readRaw found too long goes on.
	partial bool
}

func newLineReader(r io.Reader, max int) lineReader {
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	return lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// errLineTooLong is a line of more bytes than readRaw was allowed.
var errLineTooLong = errors.New("line too long")

// readRaw reads the next line, its line ending included, if it has at
// most limit bytes; io.EOF after the last line. It does not read on
// through a longer line: it returns errLineTooLong, without counting the
// line, and skipLine reads the rest of it.
func (lr *lineReader) readRaw(limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := lr.br.ReadSlice('\n')
		lr.read += int64(len(chunk))
		if len(buf)+len(chunk) > limit {
			lr.partial = err == bufio.ErrBufferFull
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(buf) == 0:
			return nil, io.EOF
		case err != nil && err != io.EOF:
			return nil, err
		}
		lr.line++
		return buf, nil
	}
}

// skipLine reads the rest of the line readRaw found too long, and counts
// it.
func (lr *lineReader) skipLine() error {
	for lr.partial {
		chunk, err := lr.br.ReadSlice('\n')
		lr.read += int64(len(chunk))
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			return err
		}
		lr.partial = err == bufio.ErrBufferFull
	}
	lr.line++
	return nil
}
