package authtest

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/auth"
)

// benchKeys is how many keys the benchmarks' store holds.
const benchKeys = 64

// fill inserts benchKeys keys into ks.
func fill(b *testing.B, ks auth.KeyStore) {
	ctx := context.Background()
	for n := range benchKeys {
		if err := ks.Insert(ctx, record(n+1, "acme", t0)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchLookup measures Lookup, what a verification costs the key store
// once the authenticator's cache has expired.
func BenchLookup(b *testing.B, ks auth.KeyStore) {
	fill(b, ks)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for n := 0; pb.Next(); n++ {
			id := record(n%benchKeys+1, "acme", t0).ID
			if r, err := ks.Lookup(ctx, id); err != nil || r.ID != id {
				b.Errorf("lookup %s: %v", id, err)
				return
			}
		}
	})
}

// BenchTouch measures Touch, the write of a key's LastUsedAt.
func BenchTouch(b *testing.B, ks auth.KeyStore) {
	fill(b, ks)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for n := 0; pb.Next(); n++ {
			id := record(n%benchKeys+1, "acme", t0).ID
			if err := ks.Touch(ctx, id, t0.Add(time.Duration(n)*time.Second)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
