package postgres

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/auth/authtest"
	"github.com/agentmem/agentmem/internal/testenv"
	storepg "github.com/agentmem/agentmem/store/postgres"
)

func TestConformance(t *testing.T) { conformance(t, testenv.PostgresURL(t)) }

// TestConformanceCitus runs the authtest suite on a Citus cluster, where
// api_keys is a reference table.
func TestConformanceCitus(t *testing.T) { conformance(t, testenv.CitusURL(t)) }

func conformance(t *testing.T, pg string) {
	var mu sync.Mutex
	schemas := map[auth.KeyStore]string{}
	open := func(t *testing.T, schema string) auth.KeyStore {
		ks, err := Open(context.Background(), pg, schema)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		schemas[ks] = schema
		mu.Unlock()
		return ks
	}
	schemaOf := func(ks auth.KeyStore) string {
		mu.Lock()
		defer mu.Unlock()
		return schemas[ks]
	}
	authtest.Run(t, authtest.Config{
		New: func(t *testing.T) auth.KeyStore { return open(t, testenv.FreshSchema(t, pg)) },
		Reopen: func(t *testing.T, ks auth.KeyStore) auth.KeyStore {
			if err := ks.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, schemaOf(ks))
		},
		// Every column of every row, as text.
		Raw: func(t *testing.T, ks auth.KeyStore) []byte {
			var dump []byte
			rows, err := ks.(*Store).pool.Query(context.Background(), "SELECT t::text, encode(hash, 'hex') FROM api_keys t")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var row, hash string
				if err := rows.Scan(&row, &hash); err != nil {
					t.Fatal(err)
				}
				dump = append(dump, row+" "+hash+"\n"...)
			}
			return dump
		},
	})
}

// TestSharesTheSessionsSchema opens the session store and the key store
// by one URL: both live in its schema.
func TestSharesTheSessionsSchema(t *testing.T) {
	pg := testenv.PostgresURL(t)
	ctx := context.Background()
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	schema := testenv.FreshSchema(t, pg)
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	st, err := storepg.OpenDriver(ctx, pg, storepg.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ks, err := auth.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer ks.Close()
	token, _, err := auth.NewKeys(ks, auth.KeysOptions{}).Create(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	if key, err := auth.NewKeys(ks, auth.KeysOptions{}).Verify(ctx, token); err != nil || key.Tenant != "acme" {
		t.Fatalf("verify: %+v %v", key, err)
	}
	var comps string
	err = st.Pool().QueryRow(ctx, "SELECT string_agg(component || ':' || version, ' ' ORDER BY component, version) FROM agentmem_migrations").Scan(&comps)
	want := "keys:1"
	for v := 1; v <= storepg.SchemaVersion(); v++ {
		want += fmt.Sprintf(" sessions:%d", v)
	}
	if err != nil || comps != want {
		t.Errorf("migrations: %q %v, want %q", comps, err, want)
	}
}
