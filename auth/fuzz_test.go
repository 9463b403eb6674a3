package auth

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseAuthorization drives the Authorization header parser and the
// token parser with arbitrary input: they never panic, every failure is
// an *UnauthenticatedError, and a token they accept has the one form a
// key has.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{
		"Bearer am_deadbeef0001_" + strings.Repeat("A", 43),
		"bearer  am_0123456789ab_" + strings.Repeat("_", 42) + "8",
		"Basic dXNlcjpwYXNz",
		"Bearer",
		"Bearer am_deadbeef0001_" + strings.Repeat("é", 21),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, given, err := ParseAuthorization(header)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) || token != "" || !given {
				t.Fatalf("%q: %q %v %v", header, token, given, err)
			}
			return
		}
		if given != (header != "") || strings.ContainsAny(token, " \t") {
			t.Fatalf("%q: %q %v", header, token, given)
		}
		id, err := ParseToken(token)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("%q: %v", token, err)
			}
			return
		}
		if len(token) != TokenLen || !strings.HasPrefix(token, Prefix+id+"_") || ValidateKeyID(id) != nil {
			t.Fatalf("accepted %q (id %q)", token, id)
		}
	})
}
