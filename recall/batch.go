package recall

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
)

// Batch is writes to an index that commit together, all or none, with a
// checkpoint: what a follower of a log writes for a batch of the log's
// changes, and its position in the log after them (see
// views/recallview). Because the documents and the position commit in
// one transaction, a crash can neither lose the position of documents
// written nor move it past documents that were not.
type Batch struct {
	// Clears remove the documents that pass each filter, in order,
	// before Upserts are written.
	Clears []Clear
	// Upserts are documents of any tenants, each ID at most once per
	// tenant, replacing those with the same IDs.
	Upserts []Doc
	// Checkpoint, when not nil, is saved with the writes.
	Checkpoint *Checkpoint
}

// Clear removes a tenant's documents that pass a filter (Backend.Clear).
type Clear struct {
	Tenant string
	Filter Filter
}

// Checkpoint is a named position saved with an index's documents: Name
// is 1 to 64 characters from [A-Za-z0-9._:-], the first a letter or
// digit; Value is at most MaxCheckpointLen bytes of UTF-8 without NUL,
// opaque to the index.
type Checkpoint struct {
	Name, Value string
}

// MaxCheckpointLen is the longest Checkpoint.Value, in bytes.
const MaxCheckpointLen = 1024

// BatchWriter is a Backend that commits a Batch in one transaction and
// reads its checkpoints back. Every backend of this module implements it
// and passes the Batch part of the recalltest conformance suite.
type BatchWriter interface {
	// WriteBatch applies the batch's clears, then its upserts, and saves
	// its checkpoint, all or none. Input is checked with CheckBatch first.
	WriteBatch(ctx context.Context, b Batch) error
	// Checkpoint returns the value of the checkpoint saved last under
	// name; ok is false when none was.
	Checkpoint(ctx context.Context, name string) (value string, ok bool, err error)
}

// checkpointName is what a Checkpoint's name may look like: the names of
// a store's feed consumers.
var checkpointName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// CheckCheckpointName validates a Checkpoint's name.
func CheckCheckpointName(name string) error {
	if !checkpointName.MatchString(name) {
		return invalid("checkpoint.name", "%.80q: want 1 to 64 characters from [A-Za-z0-9._:-], the first a letter or digit", name)
	}
	return nil
}

// CheckBatch validates a Batch and returns its clears (filters
// normalized) and its upserts grouped by tenant, in the order each
// tenant first appears, each group checked as one Upsert (CheckDocs).
func CheckBatch(b Batch) ([]Clear, [][]Doc, error) {
	clears := make([]Clear, len(b.Clears))
	for i, c := range b.Clears {
		if err := CheckTenant(c.Tenant); err != nil {
			return nil, nil, prefixInvalid(fmt.Sprintf("clears[%d].", i), err)
		}
		if err := CheckFilter(c.Filter); err != nil {
			return nil, nil, prefixInvalid(fmt.Sprintf("clears[%d].", i), err)
		}
		clears[i] = Clear{Tenant: c.Tenant, Filter: c.Filter.Normalize()}
	}
	if cp := b.Checkpoint; cp != nil {
		if err := CheckCheckpointName(cp.Name); err != nil {
			return nil, nil, err
		}
		if err := checkString("checkpoint.value", cp.Value, MaxCheckpointLen); err != nil {
			return nil, nil, err
		}
	}
	at := map[string]int{}
	var groups [][]Doc
	for _, d := range b.Upserts {
		i, ok := at[d.Tenant]
		if !ok {
			i = len(groups)
			at[d.Tenant] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], d)
	}
	for i, g := range groups {
		c, err := CheckDocs(g)
		if err != nil {
			return nil, nil, prefixInvalid("upserts: ", err)
		}
		groups[i] = c
	}
	return clears, groups, nil
}

// WriteBatch commits a batch to the index's backend (see BatchWriter),
// embedding first, as Upsert does, the documents without a vector. It
// fails with an error wrapping errors.ErrUnsupported when the backend is
// not a BatchWriter.
func (ix *Index) WriteBatch(ctx context.Context, b Batch) error {
	bw, ok := ix.b.(BatchWriter)
	if !ok {
		return fmt.Errorf("recall: %T does not write batches: %w", ix.b, errors.ErrUnsupported)
	}
	docs := slices.Clone(b.Upserts)
	if err := ix.embedMissing(ctx, docs); err != nil {
		return err
	}
	b.Upserts = docs
	return bw.WriteBatch(ctx, b)
}

// Checkpoint returns the value of the index's checkpoint called name (see
// BatchWriter); ok is false when none was saved. It fails with an error
// wrapping errors.ErrUnsupported when the backend is not a BatchWriter.
func (ix *Index) Checkpoint(ctx context.Context, name string) (string, bool, error) {
	bw, ok := ix.b.(BatchWriter)
	if !ok {
		return "", false, fmt.Errorf("recall: %T keeps no checkpoints: %w", ix.b, errors.ErrUnsupported)
	}
	return bw.Checkpoint(ctx, name)
}
