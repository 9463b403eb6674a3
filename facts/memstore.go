package facts

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/closelock"
)

// MemScheme is the URL scheme of the in-memory Store ("mem://").
const MemScheme = "mem"

func init() {
	Register(MemScheme, func(_ context.Context, u *url.URL) (Store, error) {
		if u.Host != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("facts: open %q: a mem:// URL takes no host, path or parameters", u.Redacted())
		}
		return NewMemStore(), nil
	})
}

// MemStore is a Store in process memory, for tests, examples and
// throwaway runs; it is lost when the process ends. Updates are
// serialized by one lock, which is per-user serialization and more.
type MemStore struct {
	mu closelock.RWMutex
	// users holds each user's facts, by tenant then user ID.
	users map[string]map[string][]Fact
	// owner maps a tenant's fact IDs to their user.
	owner map[string]map[string]string
	audit map[string]map[string][]AuditEntry
	// extracted holds the turns of the ActionExtracted entries of audit.
	extracted map[extractedKey]bool
	seq       int64
}

// extractedKey names a user's extracted turn.
type extractedKey struct {
	tenant, userID string
	turn           turnRef
}

var (
	_ Store       = (*MemStore)(nil)
	_ Lister      = (*MemStore)(nil)
	_ Importer    = (*MemStore)(nil)
	_ Extractions = (*MemStore)(nil)
)

// NewMemStore returns an empty in-memory Store.
func NewMemStore() *MemStore {
	return &MemStore{
		users:     map[string]map[string][]Fact{},
		owner:     map[string]map[string]string{},
		audit:     map[string]map[string][]AuditEntry{},
		extracted: map[extractedKey]bool{},
	}
}

// cloneFacts returns deep copies of fs.
func cloneFacts(fs []Fact) []Fact {
	out := make([]Fact, len(fs))
	for i, f := range fs {
		out[i] = f.Clone()
	}
	return out
}

// Update implements Store.
func (s *MemStore) Update(ctx context.Context, tenant, userID string, fn func([]Fact) (Changes, error)) error {
	if err := ValidateUser(tenant, userID); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	current := s.users[tenant][userID]
	c, err := fn(cloneFacts(current))
	if err != nil {
		return err
	}
	taken := func(id string) (bool, error) { _, ok := s.owner[tenant][id]; return ok, nil }
	if err := CheckChanges(tenant, userID, current, c, taken); err != nil {
		return err
	}
	for _, e := range c.Audit {
		if e.Action == ActionExtracted && s.extracted[extractedKey{tenant, userID, turnRef{e.SessionID, e.StepSeq}}] {
			return ExtractedError(tenant, userID, e.SessionID, e.StepSeq)
		}
	}
	s.update(tenant, userID, current, c)
	return nil
}

// Extracted implements Extractions.
func (s *MemStore) Extracted(ctx context.Context, tenant, userID, sessionID string, stepSeq int64) (bool, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	return s.extracted[extractedKey{tenant, userID, turnRef{sessionID, stepSeq}}], nil
}

// update applies checked changes to the user whose facts are current.
// s.mu is held.
func (s *MemStore) update(tenant, userID string, current []Fact, c Changes) {
	if c.IsZero() {
		return
	}
	byID := make(map[string]Fact, len(current)+len(c.Put))
	for _, f := range current {
		byID[f.ID] = f
	}
	for _, f := range c.Put {
		byID[f.ID] = f.Clone()
	}
	for _, id := range c.Delete {
		delete(byID, id)
		delete(s.owner[tenant], id)
		// Forgetting erases what the fact said from its audit entries.
		for i, e := range s.audit[tenant][userID] {
			if e.FactID == id {
				s.audit[tenant][userID][i].Before, s.audit[tenant][userID][i].After = nil, nil
			}
		}
	}
	next := make([]Fact, 0, len(byID))
	for _, f := range byID {
		next = append(next, f)
	}
	SortFacts(next)
	if s.users[tenant] == nil {
		s.users[tenant] = map[string][]Fact{}
		s.owner[tenant] = map[string]string{}
		s.audit[tenant] = map[string][]AuditEntry{}
	}
	s.users[tenant][userID] = next
	for _, f := range c.Put {
		s.owner[tenant][f.ID] = userID
	}
	for _, e := range c.Audit {
		s.seq++
		e.Seq = s.seq
		e.Before, e.After = e.Before.clone(), e.After.clone()
		s.audit[tenant][userID] = append(s.audit[tenant][userID], e)
		if e.Action == ActionExtracted {
			s.extracted[extractedKey{tenant, userID, turnRef{e.SessionID, e.StepSeq}}] = true
		}
	}
}

// Facts implements Store.
func (s *MemStore) Facts(ctx context.Context, tenant, userID string) ([]Fact, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return cloneFacts(s.users[tenant][userID]), nil
}

// Get implements Store.
func (s *MemStore) Get(ctx context.Context, tenant, id string) (Fact, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return Fact{}, err
	}
	defer unlock()
	if user, ok := s.owner[tenant][id]; ok {
		for _, f := range s.users[tenant][user] {
			if f.ID == id {
				return f.Clone(), nil
			}
		}
	}
	return Fact{}, fmt.Errorf("facts: fact %.80q: %w", id, agentmem.ErrNotFound)
}

// Audit implements Store.
func (s *MemStore) Audit(ctx context.Context, tenant, userID string) ([]AuditEntry, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := append([]AuditEntry(nil), s.audit[tenant][userID]...)
	for i := range out {
		out[i].Before, out[i].After = out[i].Before.clone(), out[i].After.clone()
	}
	return out, nil
}

// Tenants implements Lister.
func (s *MemStore) Tenants(ctx context.Context) ([]string, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []string
	for tenant := range s.users {
		if len(s.usersOf(tenant)) > 0 {
			out = append(out, tenant)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Users implements Lister.
func (s *MemStore) Users(ctx context.Context, tenant string) ([]string, error) {
	unlock, err := s.rlock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.usersOf(tenant), nil
}

// usersOf returns the users of the tenant with facts or audit entries,
// sorted. s.mu is held.
func (s *MemStore) usersOf(tenant string) []string {
	var out []string
	for user, fs := range s.users[tenant] {
		if len(fs) > 0 {
			out = append(out, user)
		}
	}
	for user, es := range s.audit[tenant] {
		if len(es) > 0 && len(s.users[tenant][user]) == 0 {
			out = append(out, user)
		}
	}
	slices.Sort(out)
	return out
}

// ImportUser implements Importer.
func (s *MemStore) ImportUser(ctx context.Context, tenant, userID string, fs []Fact, audit []AuditEntry) error {
	if err := CheckImport(tenant, userID, fs, audit); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if len(s.users[tenant][userID]) > 0 || len(s.audit[tenant][userID]) > 0 {
		return ConflictError(tenant, userID, "")
	}
	for _, f := range fs {
		if _, ok := s.owner[tenant][f.ID]; ok {
			return ConflictError(tenant, userID, f.ID)
		}
	}
	s.update(tenant, userID, nil, Changes{Put: fs, Audit: audit})
	return nil
}

// Close implements Store. The facts are dropped.
func (s *MemStore) Close() error {
	s.mu.Close(func() { s.users, s.owner, s.audit, s.extracted = nil, nil, nil, nil })
	return nil
}

// rlock takes the store's read lock, unless ctx has ended or the store
// is closed, and returns the function that releases it.
func (s *MemStore) rlock(ctx context.Context) (func(), error) { return s.mu.RLock(ctx, ErrClosed) }

// lock is rlock for the write lock.
func (s *MemStore) lock(ctx context.Context) (func(), error) { return s.mu.Lock(ctx, ErrClosed) }
