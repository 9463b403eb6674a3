package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewSchemaName returns a PostgreSQL schema name no other test uses.
func NewSchemaName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "agentmem_test_" + hex.EncodeToString(b)
}

// FreshSchema returns a new schema name in the database at url and drops
// the schema (if it was created) when the test ends. Backends create the
// schema they are given when it is missing.
func FreshSchema(t testing.TB, url string) string {
	t.Helper()
	name := NewSchemaName()
	t.Cleanup(func() { DropSchema(t, url, name) })
	return name
}

// DropSchema drops a test schema and everything in it.
func DropSchema(t testing.TB, url, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Errorf("drop schema %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	for attempt := 1; ; attempt++ {
		_, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
		// Dropping schemas that share a catalog row (pgvector's types,
		// say) at once can fail with "tuple concurrently updated":
		// another try goes through.
		if err != nil && attempt < 5 && strings.Contains(err.Error(), "tuple concurrently updated") {
			time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
		return
	}
}

// LargeValueCompression returns the compression method the backends'
// migrations choose for large values on the server at url: "lz4" when the
// server was built with it, else "pglz".
func LargeValueCompression(t testing.TB, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	// A server without lz4 refuses it as a setting too.
	if _, err := conn.Exec(ctx, "SET default_toast_compression = lz4"); err != nil {
		return "pglz"
	}
	return "lz4"
}
