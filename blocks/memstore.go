package blocks

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"

	"github.com/agentmem/agentmem/internal/closelock"
)

// MemScheme is the URL scheme of the in-memory Store ("mem://").
const MemScheme = "mem"

func init() {
	Register(MemScheme, func(_ context.Context, u *url.URL) (Store, error) {
		if u.Host != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("blocks: open %q: a mem:// URL takes no host, path or parameters", u.Redacted())
		}
		return NewMemStore(), nil
	})
}

// MemStore is a Store in process memory, for tests, examples and
// throwaway runs; it is lost when the process ends. One lock serializes
// its writes.
type MemStore struct {
	mu      closelock.RWMutex
	blocks  map[Key]Block
	history map[Key][]Change
}

var (
	_ Store    = (*MemStore)(nil)
	_ Lister   = (*MemStore)(nil)
	_ Importer = (*MemStore)(nil)
)

// NewMemStore returns an empty in-memory Store.
func NewMemStore() *MemStore {
	return &MemStore{blocks: map[Key]Block{}, history: map[Key][]Change{}}
}

// Get implements Store.
func (s *MemStore) Get(ctx context.Context, k Key) (Block, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return Block{}, err
	}
	defer unlock()
	b, ok := s.blocks[k]
	if !ok {
		return Block{}, notFound(k)
	}
	return b, nil
}

// rlock takes the store's read lock, unless ctx has ended or the store
// is closed, and returns the function that releases it.
func (s *MemStore) rlock(ctx context.Context) (func(), error) { return s.mu.RLock(ctx, ErrClosed) }

// lock is rlock for the write lock.
func (s *MemStore) lock(ctx context.Context) (func(), error) { return s.mu.Lock(ctx, ErrClosed) }

// List implements Store.
func (s *MemStore) List(ctx context.Context, tenant string, owner Owner) ([]Block, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []Block
	for k, b := range s.blocks {
		if k.Tenant == tenant && k.Owner == owner {
			out = append(out, b)
		}
	}
	SortBlocks(out)
	return out, nil
}

// Put implements Store.
func (s *MemStore) Put(ctx context.Context, b Block, c Change) error {
	if err := CheckPut(b, c); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if s.blocks[b.Key].Version != b.Version-1 {
		return ErrStale
	}
	s.blocks[b.Key] = b
	h := append(s.history[b.Key], c)
	if len(h) > MaxHistory {
		h = append([]Change(nil), h[len(h)-MaxHistory:]...)
	}
	s.history[b.Key] = h
	return nil
}

// Delete implements Store.
func (s *MemStore) Delete(ctx context.Context, k Key, version int64) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	b, ok := s.blocks[k]
	switch {
	case !ok:
		return notFound(k)
	case b.Version != version:
		return ErrStale
	}
	delete(s.blocks, k)
	delete(s.history, k)
	return nil
}

// DeleteOwner implements Store.
func (s *MemStore) DeleteOwner(ctx context.Context, tenant string, owner Owner) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for k := range s.blocks {
		if k.Tenant == tenant && k.Owner == owner {
			delete(s.blocks, k)
			delete(s.history, k)
		}
	}
	return nil
}

// History implements Store.
func (s *MemStore) History(ctx context.Context, k Key) ([]Change, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return append([]Change(nil), s.history[k]...), nil
}

// ImportBlock implements Importer.
func (s *MemStore) ImportBlock(ctx context.Context, b Block, history []Change) error {
	if err := CheckImport(b, history); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.blocks[b.Key]; ok {
		return ConflictError(b.Key)
	}
	s.blocks[b.Key] = b
	s.history[b.Key] = append([]Change(nil), history...)
	return nil
}

// Tenants implements Lister.
func (s *MemStore) Tenants(ctx context.Context) ([]string, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	seen := map[string]bool{}
	for k := range s.blocks {
		seen[k.Tenant] = true
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// Owners implements Lister.
func (s *MemStore) Owners(ctx context.Context, tenant string) ([]Owner, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	seen := map[Owner]bool{}
	for k := range s.blocks {
		if k.Tenant == tenant {
			seen[k.Owner] = true
		}
	}
	out := slices.Collect(maps.Keys(seen))
	SortOwners(out)
	return out, nil
}

// Close implements Store. The blocks are dropped.
func (s *MemStore) Close() error {
	s.mu.Close(func() { s.blocks, s.history = nil, nil })
	return nil
}
