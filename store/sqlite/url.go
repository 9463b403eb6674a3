package sqlite

import (
	"context"
	"net/url"

	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/store"
)

// Scheme is the URL scheme this package registers with store.Register.
const Scheme = sqlitedb.Scheme

func init() {
	store.Register(Scheme, func(ctx context.Context, u *url.URL) (store.Driver, error) {
		path, opts, err := ParseURL(u)
		if err != nil {
			return nil, err
		}
		return OpenDriver(ctx, path, opts)
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
	path, o, err := sqlitedb.ParseURL(u)
	return path, Options{BusyTimeout: o.BusyTimeout, ReadConns: o.ReadConns}, err
}
