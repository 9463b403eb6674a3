package recall

import "context"

var _ BatchWriter = (*Memory)(nil)

// WriteBatch implements BatchWriter: under the lock that every write
// takes, so a search sees the batch whole or not at all.
func (m *Memory) WriteBatch(ctx context.Context, b Batch) error {
	clears, groups, err := CheckBatch(b)
	if err != nil {
		return err
	}
	// Analyze outside the lock.
	entries := make([][]*memDoc, len(groups))
	for i, docs := range groups {
		entries[i] = make([]*memDoc, len(docs))
		for j, d := range docs {
			entries[i][j] = newMemDoc(d)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	for _, c := range clears {
		if t := m.tenants[c.Tenant]; t != nil {
			for id, slot := range t.ids {
				if c.Filter.Match(&t.slots[slot].doc) {
					t.remove(id)
				}
			}
			m.dropIfEmpty(c.Tenant, t)
		}
	}
	for i, docs := range groups {
		t := m.tenants[docs[0].Tenant]
		if t == nil {
			t = newMemTenant()
			m.tenants[docs[0].Tenant] = t
		}
		for _, e := range entries[i] {
			t.remove(e.doc.ID)
			t.add(e)
		}
		t.maybeCompact()
	}
	if cp := b.Checkpoint; cp != nil {
		if m.checkpoints == nil {
			m.checkpoints = map[string]string{}
		}
		m.checkpoints[cp.Name] = cp.Value
	}
	return nil
}

// Checkpoint implements BatchWriter.
func (m *Memory) Checkpoint(ctx context.Context, name string) (string, bool, error) {
	if err := CheckCheckpointName(name); err != nil {
		return "", false, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return "", false, err
	}
	v, ok := m.checkpoints[name]
	return v, ok, nil
}
