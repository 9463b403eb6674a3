package sqlindex

import (
	"context"
	"errors"
	"slices"

	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/recall"
)

var _ recall.BatchWriter = (*Index)(nil)

// The statements of the checkpoints (recall_checkpoints, the same in
// both schemas).
const (
	saveCheckpoint = `INSERT INTO recall_checkpoints (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`
	loadCheckpoint = `SELECT value FROM recall_checkpoints WHERE name = $1`
)

// tenantBatch is the part of a batch that writes to one tenant.
type tenantBatch struct {
	clears []recall.Filter
	docs   []recall.Doc
	ids    []string
	terms  [][]string
}

// WriteBatch implements recall.BatchWriter with one write transaction. On
// SQLite the transaction may be shared with other writers' and committed
// together. It takes the lock of each tenant it writes to, in the tenants'
// order, so that two batches never wait for each other's. It applies the
// tenant's clears and then its upserts, and saves the checkpoint. A batch
// with a checkpoint is redoable (sqldb.Redoable): its commit does not wait
// for the disk.
func (x *Index) WriteBatch(ctx context.Context, b recall.Batch) error {
	clears, groups, err := recall.CheckBatch(b)
	if err != nil {
		return err
	}
	if err := x.g.Closed("write batch"); err != nil {
		return err
	}
	byTenant := map[string]*tenantBatch{}
	get := func(tenant string) *tenantBatch {
		t := byTenant[tenant]
		if t == nil {
			t = &tenantBatch{}
			byTenant[tenant] = t
		}
		return t
	}
	for _, c := range clears {
		t := get(c.Tenant)
		t.clears = append(t.clears, c.Filter)
	}
	// Analyze outside the write transaction.
	for _, docs := range groups {
		t := get(docs[0].Tenant)
		t.docs = docs
		t.ids = make([]string, len(docs))
		t.terms = make([][]string, len(docs))
		for i, d := range docs {
			t.ids[i], t.terms[i] = d.ID, recall.Tokenize(d.Text)
		}
	}
	tenants := make([]string, 0, len(byTenant))
	for t := range byTenant {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants)
	if b.Checkpoint != nil {
		// A batch lost to a power failure is lost with its checkpoint,
		// and its follower writes it again from the one before.
		ctx = sqldb.Redoable(ctx)
	}
	err = x.q.db.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		for _, tenant := range tenants {
			tb := byTenant[tenant]
			if _, err := x.inTenant(ctx, tx, tenant, func(ctx context.Context, tx sqldb.Tx) (int, delta, error) {
				var d delta
				for _, f := range tb.clears {
					cond, args := x.q.Filter(f, 2)
					_, dd, err := x.remove(ctx, tx, tenant, `true`+cond, args...)
					if err != nil {
						return 0, delta{}, err
					}
					d.n, d.len = d.n+dd.n, d.len+dd.len
				}
				if len(tb.docs) > 0 {
					dd, err := x.upsert(ctx, tx, tb.docs, tb.ids, tb.terms)
					if err != nil {
						return 0, delta{}, err
					}
					d.n, d.len = d.n+dd.n, d.len+dd.len
				}
				return 0, d, nil
			}); err != nil {
				return err
			}
		}
		if cp := b.Checkpoint; cp != nil {
			if _, err := tx.Exec(ctx, saveCheckpoint, cp.Name, cp.Value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return x.g.Err("write batch", err)
	}
	return nil
}

// Checkpoint implements recall.BatchWriter.
func (x *Index) Checkpoint(ctx context.Context, name string) (string, bool, error) {
	if err := recall.CheckCheckpointName(name); err != nil {
		return "", false, err
	}
	if err := x.g.Closed("checkpoint"); err != nil {
		return "", false, err
	}
	var v string
	err := x.q.reader.QueryRow(ctx, loadCheckpoint, name).Scan(&v)
	if errors.Is(err, sqldb.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, x.g.Err("checkpoint", err)
	}
	return v, true, nil
}
