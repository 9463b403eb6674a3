package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// AssignTenant moves a session into a tenant: typically a session created
// before the first API key, when requests carried no tenant, which a key
// (always of a tenant) cannot reach. The session keeps its ID, metadata,
// times, sequence numbers and step bytes: it is read whole (as Export
// reads it), deleted, and recreated in the tenant by the store's Importer.
// A session already in the tenant is left as it is.
//
// backup, when not nil, receives the session's export (Export's JSONL)
// before anything changes, so that nothing is lost if the process dies
// between the delete and the recreation: Import restores it. If the
// recreation fails, the session is recreated as it was and the error
// returned; if that fails too, the error says so and the backup is the
// session.
//
// The move is not atomic with other writers: run it when nothing writes to
// the session (an append that lands between the read and the delete is
// lost). A branch's inherited history becomes its own, as in an export;
// branches of the session keep what they inherited. Errors: ErrInvalid
// for a bad ID or tenant (nothing changes), ErrNotFound for a missing
// session, errors.ErrUnsupported for a store without Importer (a client
// of the HTTP API), and what the store returns.
func AssignTenant(ctx context.Context, st Store, id, tenant string, backup io.Writer) (*Session, error) {
	imp, ok := st.(Importer)
	if !ok {
		return nil, fmt.Errorf("store: assign tenant: %T does not implement store.Importer, which recreating the session needs: %w", st, errors.ErrUnsupported)
	}
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := Export(ctx, st, id, &buf); err != nil {
		return nil, err
	}
	s, entries, err := readExport(ctx, bytes.NewReader(buf.Bytes()), ImportOptions{})
	if err != nil {
		return nil, fmt.Errorf("store: assign tenant: session %s does not read back: %w", id, err)
	}
	if s.Tenant == tenant {
		return s, nil
	}
	moved := s.Clone()
	moved.Tenant = tenant
	if err := ValidateImport(moved, entries); err != nil {
		return nil, err
	}
	if backup != nil {
		if _, err := backup.Write(buf.Bytes()); err != nil {
			return nil, fmt.Errorf("store: assign tenant: writing the backup of session %s: %w", id, err)
		}
	}
	if err := st.Delete(ctx, id); err != nil {
		return nil, err
	}
	if err := imp.ImportEntries(ctx, moved, entries); err != nil {
		if rerr := imp.ImportEntries(context.WithoutCancel(ctx), s, entries); rerr != nil {
			return nil, fmt.Errorf("store: assign tenant: session %s was deleted and recreating it in tenant %q failed (%w), and so did restoring it (%v): import it from the backup", id, tenant, err, rerr)
		}
		return nil, fmt.Errorf("store: assign tenant: session %s: %w (it is as it was)", id, err)
	}
	return moved, nil
}
