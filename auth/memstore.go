package auth

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/agentmem/store"
)

// MemStore is a KeyStore in memory, for tests and mem:// servers: its
// keys are gone when the process ends.
type MemStore struct {
	mu     sync.Mutex
	keys   map[string]*Record
	closed bool
}

var _ KeyStore = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{keys: map[string]*Record{}} }

// copyRecord returns a deep copy of r.
func copyRecord(r *Record) *Record {
	c := *r
	c.Hash = slices.Clone(r.Hash)
	return &c
}

// Insert implements KeyStore.
func (m *MemStore) Insert(_ context.Context, rec *Record) error {
	if err := ValidateRecord(rec); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return store.ErrClosed
	}
	if _, ok := m.keys[rec.ID]; ok {
		return Conflict(rec.ID)
	}
	c := copyRecord(rec)
	c.CreatedAt, c.LastUsedAt, c.RevokedAt = Normalize(c.CreatedAt), Normalize(c.LastUsedAt), Normalize(c.RevokedAt)
	m.keys[rec.ID] = c
	return nil
}

// Lookup implements KeyStore.
func (m *MemStore) Lookup(_ context.Context, id string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, store.ErrClosed
	}
	r, ok := m.keys[id]
	if !ok {
		return nil, NotFound(id)
	}
	return copyRecord(r), nil
}

// List implements KeyStore.
func (m *MemStore) List(_ context.Context, tenant string) ([]*Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, store.ErrClosed
	}
	out := []*Key{}
	for _, r := range m.keys {
		if tenant == "" || r.Tenant == tenant {
			k := r.Key
			out = append(out, &k)
		}
	}
	slices.SortFunc(out, func(a, b *Key) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Revoke implements KeyStore.
func (m *MemStore) Revoke(_ context.Context, id string, at time.Time) (*Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, store.ErrClosed
	}
	r, ok := m.keys[id]
	if !ok {
		return nil, NotFound(id)
	}
	if r.RevokedAt.IsZero() {
		r.RevokedAt = Normalize(at)
	}
	k := r.Key
	return &k, nil
}

// Touch implements KeyStore.
func (m *MemStore) Touch(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return store.ErrClosed
	}
	r, ok := m.keys[id]
	if !ok {
		return NotFound(id)
	}
	if at = Normalize(at); at.After(r.LastUsedAt) {
		r.LastUsedAt = at
	}
	return nil
}

// Any implements KeyStore.
func (m *MemStore) Any(context.Context) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, store.ErrClosed
	}
	return len(m.keys) > 0, nil
}

// Close implements KeyStore. Operations after Close fail with
// store.ErrClosed.
func (m *MemStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
