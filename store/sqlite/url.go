package sqlite

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/agentmem/agentmem/store"
)

// Scheme is the URL scheme this package registers with store.Register.
const Scheme = "sqlite"

func init() {
	store.Register(Scheme, func(ctx context.Context, u *url.URL) (store.Store, error) {
		path, opts, err := ParseURL(u)
		if err != nil {
			return nil, err
		}
		return Open(ctx, path, opts)
	})
}

// ParseURL returns the path and options a sqlite URL names. The forms are:
//
//	sqlite:///abs/path/agentmem.db   an absolute path
//	sqlite://data/agentmem.db        a path relative to the working directory
//	sqlite:agentmem.db               the same, without slashes
//	sqlite://?mode=memory            a private in-memory database (also sqlite::memory:)
//
// Query parameters: busy_timeout (a Go duration such as 5s, see
// Options.BusyTimeout), read_conns (Options.ReadConns) and mode=memory.
// Unknown parameters are an error, so a misspelt one is not ignored.
func ParseURL(u *url.URL) (string, Options, error) {
	var opts Options
	if u.Scheme != Scheme {
		return "", opts, fmt.Errorf("sqlite: URL %q: scheme is not %q", u.Redacted(), Scheme)
	}
	if u.User != nil {
		return "", opts, fmt.Errorf("sqlite: URL %q: a sqlite URL has no user", u.Redacted())
	}
	path := u.Opaque
	if path == "" {
		path = u.Host + u.Path
	} else if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	memory := path == MemoryPath
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "mode":
			if v != "memory" {
				return "", opts, fmt.Errorf("sqlite: URL %q: mode=%q: the only mode is memory", u.Redacted(), v)
			}
			memory = true
		case "busy_timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return "", opts, fmt.Errorf("sqlite: URL %q: busy_timeout=%q is not a duration such as 5s", u.Redacted(), v)
			}
			opts.BusyTimeout = d
		case "read_conns":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return "", opts, fmt.Errorf("sqlite: URL %q: read_conns=%q is not a number of connections", u.Redacted(), v)
			}
			opts.ReadConns = n
		default:
			return "", opts, fmt.Errorf("sqlite: URL %q: unknown parameter %q (known: busy_timeout, read_conns, mode)", u.Redacted(), k)
		}
	}
	if memory {
		if path != "" && path != MemoryPath {
			return "", opts, fmt.Errorf("sqlite: URL %q: mode=memory with a path", u.Redacted())
		}
		return MemoryPath, opts, nil
	}
	if path == "" {
		return "", opts, fmt.Errorf("sqlite: URL %q: no path (sqlite:///abs/path.db, sqlite://rel/path.db or sqlite://?mode=memory)", u.Redacted())
	}
	return path, opts, nil
}
