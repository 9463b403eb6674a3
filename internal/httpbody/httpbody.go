// Package httpbody reads HTTP request bodies whole, into a buffer of the
// size the request declares rather than one grown by doubling.
package httpbody

import "io"

// Read reads r to its end, as io.ReadAll does. When declared (a
// request's ContentLength; 0 or less for unknown) is at most presize, it
// reads into one buffer of that size, where io.ReadAll would grow its
// buffer several times. Otherwise it reads as io.ReadAll does, so that a
// declared length cannot make the caller allocate more than presize
// before the body arrives. A body longer than declared grows the buffer
// as io.ReadAll would. r bounds the body (http.MaxBytesReader); Read does
// not.
func Read(r io.Reader, declared, presize int64) ([]byte, error) {
	if declared <= 0 || declared > presize {
		return io.ReadAll(r)
	}
	// One byte more than declared: the read that finds the end needs room.
	b := make([]byte, 0, declared+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
