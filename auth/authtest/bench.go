package authtest

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/auth"
)

// benchKeys is how many keys the benchmarks' store holds.
const benchKeys = 64

// Bench runs the key store benchmarks on stores that open returns (a
// new, empty one each; Bench closes them):
//
//   - Lookup: what a verification costs the key store once the
//     authenticator's cache has expired;
//   - Touch: the write of a key's LastUsedAt.
func Bench(b *testing.B, open func(b *testing.B) auth.KeyStore) {
	b.Run("Lookup", func(b *testing.B) {
		benchEach(b, open, func(ctx context.Context, ks auth.KeyStore, id string, n int) error {
			r, err := ks.Lookup(ctx, id)
			if err == nil && r.ID != id {
				b.Errorf("lookup %s found %s", id, r.ID)
			}
			return err
		})
	})
	b.Run("Touch", func(b *testing.B) {
		benchEach(b, open, func(ctx context.Context, ks auth.KeyStore, id string, n int) error {
			return ks.Touch(ctx, id, t0.Add(time.Duration(n)*time.Second))
		})
	})
}

// benchEach runs op in parallel on a store of benchKeys keys, the n-th
// call of a goroutine on key n modulo benchKeys.
func benchEach(b *testing.B, open func(b *testing.B) auth.KeyStore, op func(ctx context.Context, ks auth.KeyStore, id string, n int) error) {
	ctx := context.Background()
	ks := open(b)
	defer ks.Close()
	var ids []string
	for n := range benchKeys {
		r := record(n+1, "acme", t0)
		if err := ks.Insert(ctx, r); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for n := 0; pb.Next(); n++ {
			if err := op(ctx, ks, ids[n%benchKeys], n); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
