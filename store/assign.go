package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentmem/agentmem"
)

// AssignTenant moves the session of tenant with this ID into newTenant,
// under the same ID: typically a session created before the first API key,
// when requests carried no tenant (tenant ""), which a key (always of a
// tenant) cannot reach. The session keeps its ID, metadata, times, sequence
// numbers and step bytes: it is read whole (as Export reads it), recreated
// in newTenant by the store's Importer, and only then deleted from its old
// tenant, so a failure at any point loses nothing. A session already in
// newTenant (tenant == newTenant) is left as it is.
//
// backup, when not nil, receives the session's export (Export's JSONL)
// before anything changes; Import restores it.
//
// The move is not atomic with other writers: run it when nothing writes to
// the session (an append that lands between the read and the delete is
// lost). A branch's inherited history becomes its own, as in an export;
// branches of the session keep what they inherited. Errors: ErrInvalid for
// a bad ID or tenant, ErrNotFound for a missing session, and ErrConflict
// when newTenant already has a session with this ID (nothing changes then).
// A store without Importer (a client of the HTTP API) gives
// errors.ErrUnsupported; other errors are the store's. If the old session
// cannot be deleted after the copy, the error says so and the session is in
// both tenants.
func AssignTenant(ctx context.Context, st *Store, tenant, id, newTenant string, backup io.Writer) (*Session, error) {
	if !st.Supports(CanImport) {
		return nil, fmt.Errorf("store: assign tenant: %T does not implement store.Importer, which recreating the session needs: %w", st.d, errors.ErrUnsupported)
	}
	if err := ValidateKey(tenant, id); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := Export(ctx, st, tenant, id, &buf); err != nil {
		return nil, err
	}
	s, entries, err := readExport(ctx, bytes.NewReader(buf.Bytes()), ImportOptions{})
	if err != nil {
		return nil, fmt.Errorf("store: assign tenant: session %s does not read back: %w", id, err)
	}
	if tenant == newTenant {
		return s, nil
	}
	moved := s.Clone()
	moved.Tenant = newTenant
	if err := validateImport(moved, entries); err != nil {
		return nil, err
	}
	if backup != nil {
		if _, err := backup.Write(buf.Bytes()); err != nil {
			return nil, fmt.Errorf("store: assign tenant: writing the backup of session %s: %w", id, err)
		}
	}
	if err := st.ImportEntries(ctx, moved, entries); err != nil {
		return nil, err
	}
	if err := st.Delete(ctx, tenant, id); err != nil && !errors.Is(err, agentmem.ErrNotFound) {
		return moved, fmt.Errorf("store: assign tenant: session %s is copied into tenant %q, but deleting it from tenant %q failed: %w", id, newTenant, tenant, err)
	}
	return moved, nil
}
