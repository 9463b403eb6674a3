package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/auth/authtest"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	storesqlite "github.com/agentmem/agentmem/store/sqlite"
)

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	paths := map[auth.KeyStore]string{}
	open := func(t *testing.T, path string) auth.KeyStore {
		ks, err := Open(context.Background(), path, sqlitedb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		paths[ks] = path
		mu.Unlock()
		return ks
	}
	authtest.Run(t, authtest.Config{
		New: func(t *testing.T) auth.KeyStore { return open(t, filepath.Join(t.TempDir(), "agentmem.db")) },
		Reopen: func(t *testing.T, ks auth.KeyStore) auth.KeyStore {
			if err := ks.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			path := paths[ks]
			mu.Unlock()
			return open(t, path)
		},
		// Every byte on disk: the database file and its write-ahead log.
		Raw: func(t *testing.T, ks auth.KeyStore) []byte {
			mu.Lock()
			path := paths[ks]
			mu.Unlock()
			var all []byte
			for _, p := range []string{path, path + "-wal"} {
				b, err := os.ReadFile(p)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				all = append(all, b...)
			}
			return all
		},
	})
}

// TestSharesTheSessionsFile opens the session store and the key store on
// one file, in either order: each migrates its own component.
func TestSharesTheSessionsFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	st, err := storesqlite.Open(ctx, path, storesqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ks, err := Open(ctx, path, sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ks.Close()
	k := auth.NewKeys(ks, auth.KeysOptions{})
	token, _, err := k.Create(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	// Through the URL, as agentmem keys and serve open it.
	other, err := auth.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if key, err := auth.NewKeys(other, auth.KeysOptions{}).Verify(ctx, token); err != nil || key.Tenant != "acme" {
		t.Fatalf("verify through the URL: %+v %v", key, err)
	}
	var comps []string
	rows, err := ks.db.R.QueryContext(ctx, "SELECT component || ':' || version FROM agentmem_migrations ORDER BY component, version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		rows.Scan(&c)
		comps = append(comps, c)
	}
	// The keys' migration beside the session store's, whatever their number.
	if got := strings.Join(comps, " "); !strings.HasPrefix(got, "keys:1 sessions:1 sessions:2 ") {
		t.Errorf("migrations: %s, want keys:1 beside the sessions' own", got)
	}
}

func TestOpenURLErrors(t *testing.T) {
	for _, u := range []string{"sqlite://", "sqlite:///x.db?bogus=1"} {
		if ks, err := auth.Open(context.Background(), u); err == nil {
			ks.Close()
			t.Errorf("%s: no error", u)
		}
	}
}
