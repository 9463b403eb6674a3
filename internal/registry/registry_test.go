package registry

import (
	"context"
	"net/url"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := New[string]("thing")
	r.Register("Mem", func(_ context.Context, u *url.URL) (string, error) { return "mem:" + u.Host, nil })
	r.Register("sqlite", func(_ context.Context, u *url.URL) (string, error) { return "sqlite:" + u.Path, nil })
	if got := strings.Join(r.Schemes(), ","); got != "mem,sqlite" {
		t.Errorf("schemes %q", got)
	}
	ctx := context.Background()
	if v, err := r.Open(ctx, "MEM://x"); err != nil || v != "mem:x" {
		t.Errorf("open: %q %v", v, err)
	}
	for raw, want := range map[string]string{
		"postgres://bob:hunter2@db/x":      `thing: open "postgres://bob:xxxxx@db/x": unknown scheme "postgres" (registered: mem, sqlite;`,
		"/tmp/x.db":                        `thing: open "/tmp/x.db": the URL has no scheme (registered: mem, sqlite)`,
		"postgres://bob:hunter2@db:port/x": "thing: open: the URL does not parse",
	} {
		_, err := r.Open(ctx, raw)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q): %v", raw, err)
		}
	}
	for _, bad := range []func(){
		func() { r.Register("sqlite", func(context.Context, *url.URL) (string, error) { return "", nil }) },
		func() { r.Register("", func(context.Context, *url.URL) (string, error) { return "", nil }) },
		func() { r.Register("x", nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			bad()
		}()
	}
}
