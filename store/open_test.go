package store_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/store"
	_ "github.com/agentmem/agentmem/store/memstore"
)

func TestOpenUnknownScheme(t *testing.T) {
	_, err := store.Open(context.Background(), "nosuch://user:secret@host/db")
	if err == nil || !strings.Contains(err.Error(), "mem") || !strings.Contains(err.Error(), "nosuch") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("Open of an unknown scheme: %v (want the registered schemes listed, no password)", err)
	}
	if _, err := store.Open(context.Background(), "just/a/path"); err == nil || !strings.Contains(err.Error(), "no scheme") {
		t.Fatalf("Open without a scheme: %v", err)
	}
	if _, err := store.Open(context.Background(), "mem://\x7f"); err == nil {
		t.Fatal("Open of an unparsable URL succeeded")
	}
}

func TestRegister(t *testing.T) {
	var got *url.URL
	store.Register("Test-Scheme", func(_ context.Context, u *url.URL) (store.Driver, error) {
		got = u
		return nil, nil
	})
	if _, err := store.Open(context.Background(), "test-scheme://h/p?x=1"); err != nil || got == nil || got.Host != "h" {
		t.Fatalf("Open through a registered opener: %v, %v", got, err)
	}
	if !strings.Contains(strings.Join(store.Schemes(), ","), "test-scheme") {
		t.Fatalf("Schemes() = %v", store.Schemes())
	}
	for name, f := range map[string]func(){
		"twice": func() {
			store.Register("test-scheme", func(context.Context, *url.URL) (store.Driver, error) { return nil, nil })
		},
		"no opener": func() { store.Register("other", nil) },
		"no scheme": func() { store.Register("", func(context.Context, *url.URL) (store.Driver, error) { return nil, nil }) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register %s did not panic", name)
				}
			}()
			f()
		}()
	}
}
