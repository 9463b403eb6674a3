package authtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/store"
)

// Config describes the backend under test.
type Config struct {
	// New returns a new, empty key store, isolated from the stores of
	// other subtests. The suite closes it when the subtest ends.
	New func(t *testing.T) auth.KeyStore
	// Reopen, when set, closes ks and returns a new store over the same
	// data, as a process that restarts would; the suite then checks that
	// keys survive it. The suite closes the returned store.
	Reopen func(t *testing.T, ks auth.KeyStore) auth.KeyStore
	// Raw, when set, returns every byte the backend keeps for its keys
	// (a dump of its tables), so the suite can check that no token is
	// stored in plain text.
	Raw func(t *testing.T, ks auth.KeyStore) []byte
}

// t0 is the suite's clock origin: microseconds and a zone other than UTC,
// so a backend that loses either shows.
var t0 = time.Date(2026, 4, 5, 6, 7, 8, 123456789, time.FixedZone("CET", 3600))

// Run runs the conformance suite against the backend cfg describes.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.New == nil {
		t.Fatal("authtest: Config.New is required")
	}
	s := &suite{cfg: cfg}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"InsertLookup", s.insertLookup},
		{"Conflict", s.conflict},
		{"NotFound", s.notFound},
		{"List", s.list},
		{"Revoke", s.revoke},
		{"Touch", s.touch},
		{"Any", s.any},
		{"BadInput", s.badInput},
		{"Keys", s.keys},
		{"HashedAtRest", s.hashedAtRest},
		{"Concurrency", s.concurrency},
		{"Reopen", s.reopen},
		{"Close", s.close},
	} {
		t.Run(tc.name, tc.fn)
	}
}

type suite struct{ cfg Config }

// open returns a new store closed when the test ends.
func (s *suite) open(t *testing.T) auth.KeyStore {
	t.Helper()
	ks := s.cfg.New(t)
	t.Cleanup(func() { ks.Close() })
	return ks
}

// record returns a record for tests: ID from n, a hash from seed.
func record(n int, tenant string, created time.Time) *auth.Record {
	h := bytes.Repeat([]byte{byte(n), 0xa5}, auth.HashLen/2)
	return &auth.Record{Key: auth.Key{ID: fmt.Sprintf("%012x", n), Tenant: tenant, Name: fmt.Sprintf("key %d «ü»", n), CreatedAt: created}, Hash: h}
}

func ctx() context.Context { return context.Background() }

// sameKey fails unless got equals want as a backend keeps it.
func sameKey(t *testing.T, got, want *auth.Key) {
	t.Helper()
	norm := func(k *auth.Key) auth.Key {
		c := *k
		c.CreatedAt, c.LastUsedAt, c.RevokedAt = auth.Normalize(c.CreatedAt), auth.Normalize(c.LastUsedAt), auth.Normalize(c.RevokedAt)
		return c
	}
	g, w := norm(got), norm(want)
	if g.ID != w.ID || g.Tenant != w.Tenant || g.Name != w.Name || !g.CreatedAt.Equal(w.CreatedAt) ||
		!g.LastUsedAt.Equal(w.LastUsedAt) || !g.RevokedAt.Equal(w.RevokedAt) {
		t.Errorf("key\n got %+v\nwant %+v", g, w)
	}
	for _, tm := range []time.Time{got.CreatedAt, got.LastUsedAt, got.RevokedAt} {
		if !tm.IsZero() && tm.Location() != time.UTC {
			t.Errorf("time %v is not in UTC", tm)
		}
	}
}

func (s *suite) insertLookup(t *testing.T) {
	ks := s.open(t)
	rec := record(1, "acme", t0)
	if err := ks.Insert(ctx(), rec); err != nil {
		t.Fatal(err)
	}
	got, err := ks.Lookup(ctx(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameKey(t, &got.Key, &rec.Key)
	if !bytes.Equal(got.Hash, rec.Hash) {
		t.Errorf("hash %x, want %x", got.Hash, rec.Hash)
	}
	if !got.CreatedAt.Equal(t0.Truncate(time.Microsecond)) {
		t.Errorf("created %v, want %v to the microsecond", got.CreatedAt, t0)
	}
	// The store keeps copies.
	got.Hash[0] ^= 0xff
	rec.Hash[1] ^= 0xff
	again, _ := ks.Lookup(ctx(), rec.ID)
	if again.Hash[0] != 1 || again.Hash[1] != 0xa5 {
		t.Errorf("the store shares its hash slice: %x", again.Hash)
	}
}

func (s *suite) conflict(t *testing.T) {
	ks := s.open(t)
	if err := ks.Insert(ctx(), record(1, "acme", t0)); err != nil {
		t.Fatal(err)
	}
	other := record(1, "globex", t0.Add(time.Hour))
	if err := ks.Insert(ctx(), other); !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("insert of an ID in use: %v, want ErrConflict", err)
	}
	got, _ := ks.Lookup(ctx(), other.ID)
	if got.Tenant != "acme" {
		t.Errorf("the conflicting insert changed the key: %+v", got.Key)
	}
}

func (s *suite) notFound(t *testing.T) {
	ks := s.open(t)
	id := "0123456789ab"
	if _, err := ks.Lookup(ctx(), id); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("Lookup: %v", err)
	}
	if _, err := ks.Revoke(ctx(), id, t0); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("Revoke: %v", err)
	}
	if err := ks.Touch(ctx(), id, t0); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("Touch: %v", err)
	}
}

func (s *suite) list(t *testing.T) {
	ks := s.open(t)
	if keys, err := ks.List(ctx(), ""); err != nil || len(keys) != 0 {
		t.Fatalf("empty store: %v %v", keys, err)
	}
	// Inserted out of order; two share a creation time (then by ID).
	for _, r := range []*auth.Record{
		record(3, "acme", t0.Add(2*time.Second)),
		record(1, "globex", t0),
		record(2, "acme", t0),
		record(4, "acme", t0.Add(time.Second)),
	} {
		if err := ks.Insert(ctx(), r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ks.Revoke(ctx(), fmt.Sprintf("%012x", 4), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	ids := func(keys []*auth.Key) string {
		var out []string
		for _, k := range keys {
			out = append(out, k.ID[10:]+":"+k.Tenant)
		}
		return fmt.Sprint(out)
	}
	all, err := ks.List(ctx(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(all); got != "[01:globex 02:acme 04:acme 03:acme]" {
		t.Errorf("all keys: %s", got)
	}
	acme, err := ks.List(ctx(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(acme); got != "[02:acme 04:acme 03:acme]" {
		t.Errorf("acme's keys: %s", got)
	}
	if !acme[1].Revoked() || acme[0].Revoked() {
		t.Errorf("revoked flags: %+v %+v", acme[0], acme[1])
	}
	none, err := ks.List(ctx(), "initech")
	if err != nil || len(none) != 0 {
		t.Errorf("a tenant without keys: %v %v", none, err)
	}
}

func (s *suite) revoke(t *testing.T) {
	ks := s.open(t)
	rec := record(7, "acme", t0)
	if err := ks.Insert(ctx(), rec); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Hour)
	k, err := ks.Revoke(ctx(), rec.ID, at)
	if err != nil {
		t.Fatal(err)
	}
	want := rec.Key
	want.RevokedAt = at
	sameKey(t, k, &want)
	// A second revocation keeps the first time.
	k, err = ks.Revoke(ctx(), rec.ID, at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	sameKey(t, k, &want)
	got, _ := ks.Lookup(ctx(), rec.ID)
	sameKey(t, &got.Key, &want)
	if !got.Revoked() {
		t.Error("not revoked")
	}
}

func (s *suite) touch(t *testing.T) {
	ks := s.open(t)
	rec := record(9, "acme", t0)
	if err := ks.Insert(ctx(), rec); err != nil {
		t.Fatal(err)
	}
	got, _ := ks.Lookup(ctx(), rec.ID)
	if !got.LastUsedAt.IsZero() {
		t.Errorf("a new key was used at %v", got.LastUsedAt)
	}
	used := t0.Add(time.Minute)
	if err := ks.Touch(ctx(), rec.ID, used); err != nil {
		t.Fatal(err)
	}
	// An earlier time (a slower server's) does not move it back.
	if err := ks.Touch(ctx(), rec.ID, used.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	got, _ = ks.Lookup(ctx(), rec.ID)
	if !got.LastUsedAt.Equal(used.Truncate(time.Microsecond)) {
		t.Errorf("last used %v, want %v", got.LastUsedAt, used)
	}
}

func (s *suite) any(t *testing.T) {
	ks := s.open(t)
	if has, err := ks.Any(ctx()); err != nil || has {
		t.Fatalf("empty store: %v %v", has, err)
	}
	rec := record(1, "acme", t0)
	if err := ks.Insert(ctx(), rec); err != nil {
		t.Fatal(err)
	}
	if has, err := ks.Any(ctx()); err != nil || !has {
		t.Fatalf("one key: %v %v", has, err)
	}
	// A revoked key still counts: revoking never turns enforcement off.
	if _, err := ks.Revoke(ctx(), rec.ID, t0); err != nil {
		t.Fatal(err)
	}
	if has, err := ks.Any(ctx()); err != nil || !has {
		t.Fatalf("one revoked key: %v %v", has, err)
	}
}

func (s *suite) badInput(t *testing.T) {
	ks := s.open(t)
	for name, mod := range map[string]func(r *auth.Record){
		"empty tenant":    func(r *auth.Record) { r.Tenant = "" },
		"bad tenant":      func(r *auth.Record) { r.Tenant = "../etc" },
		"bad id":          func(r *auth.Record) { r.ID = "XYZ" },
		"short hash":      func(r *auth.Record) { r.Hash = r.Hash[:5] },
		"no time":         func(r *auth.Record) { r.CreatedAt = time.Time{} },
		"control in name": func(r *auth.Record) { r.Name = "a\x00b" },
		"invalid UTF-8":   func(r *auth.Record) { r.Name = "a\xffb" },
	} {
		r := record(5, "acme", t0)
		mod(r)
		if err := ks.Insert(ctx(), r); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if has, _ := ks.Any(ctx()); has {
		t.Error("a refused insert stored a key")
	}
}

// keys runs auth.Keys over the backend: create, verify, revoke.
func (s *suite) keys(t *testing.T) {
	ks := s.open(t)
	now := t0
	k := auth.NewKeys(ks, auth.KeysOptions{Clock: func() time.Time { return now }})
	token, key, err := k.Create(ctx(), "acme", "ci")
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.Verify(ctx(), token)
	if err != nil || got.ID != key.ID || got.Tenant != "acme" {
		t.Fatalf("verify: %+v %v", got, err)
	}
	// One character off is refused (a different valid-looking secret).
	wrong := []byte(token)
	if wrong[20] == 'A' {
		wrong[20] = 'B'
	} else {
		wrong[20] = 'A'
	}
	if _, err := k.Verify(ctx(), string(wrong)); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("a wrong secret: %v", err)
	}
	now = now.Add(time.Hour)
	if _, err := k.Revoke(ctx(), key.ID); err != nil {
		t.Fatal(err)
	}
	var ue *auth.UnauthenticatedError
	if _, err := k.Verify(ctx(), token); !errors.As(err, &ue) || ue.Reason != auth.ReasonRevoked {
		t.Errorf("a revoked key: %v", err)
	}
}

func (s *suite) hashedAtRest(t *testing.T) {
	if s.cfg.Raw == nil {
		t.Skip("the backend gives no raw dump")
	}
	ks := s.open(t)
	k := auth.NewKeys(ks, auth.KeysOptions{})
	token, key, err := k.Create(ctx(), "acme", "laptop")
	if err != nil {
		t.Fatal(err)
	}
	raw := s.cfg.Raw(t, ks)
	secret := token[len(auth.Prefix)+13:]
	if !bytes.Contains(raw, []byte(key.ID)) {
		t.Fatal("the raw dump does not hold the key at all: it dumps the wrong thing")
	}
	if bytes.Contains(raw, []byte(token)) || bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(secret[:20])) {
		t.Error("the token's secret is stored in plain text")
	}
	if !bytes.Contains(raw, auth.HashToken(token)) && !bytes.Contains(raw, []byte(fmt.Sprintf("%x", auth.HashToken(token)))) {
		t.Error("the token's hash is not stored")
	}
}

func (s *suite) concurrency(t *testing.T) {
	ks := s.open(t)
	k := auth.NewKeys(ks, auth.KeysOptions{})
	const n = 16
	tokens := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, key, err := k.Create(ctx(), fmt.Sprintf("t%d", i%4), "")
			if err != nil {
				errs <- err
				return
			}
			tokens[i] = tok
			if err := ks.Touch(ctx(), key.ID, time.Now()); err != nil {
				errs <- err
			}
			if _, err := k.Verify(ctx(), tok); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, err := ks.List(ctx(), "")
	if err != nil || len(all) != n {
		t.Fatalf("%d keys after %d creates: %v", len(all), n, err)
	}
	t2, _ := ks.List(ctx(), "t2")
	if len(t2) != n/4 {
		t.Errorf("t2 has %d keys", len(t2))
	}
}

func (s *suite) reopen(t *testing.T) {
	if s.cfg.Reopen == nil {
		t.Skip("the backend keeps nothing across a reopen")
	}
	ks := s.cfg.New(t)
	rec := record(3, "acme", t0)
	if err := ks.Insert(ctx(), rec); err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Revoke(ctx(), rec.ID, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	ks = s.cfg.Reopen(t, ks)
	t.Cleanup(func() { ks.Close() })
	got, err := ks.Lookup(ctx(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := rec.Key
	want.RevokedAt = t0.Add(time.Second)
	sameKey(t, &got.Key, &want)
	if !bytes.Equal(got.Hash, rec.Hash) {
		t.Error("the hash changed across a reopen")
	}
}

func (s *suite) close(t *testing.T) {
	ks := s.cfg.New(t)
	if err := ks.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ks.Insert(ctx(), record(1, "acme", t0)); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Insert after Close: %v, want store.ErrClosed", err)
	}
	if _, err := ks.Lookup(ctx(), "000000000001"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Lookup after Close: %v, want store.ErrClosed", err)
	}
	if _, err := ks.Any(ctx()); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Any after Close: %v, want store.ErrClosed", err)
	}
	_ = ks.Close() // closing twice is harmless
}
