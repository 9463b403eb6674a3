package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/store"
	"github.com/spf13/cobra"
)

// assignFlags are the flags of agentmem keys assign-sessions.
type assignFlags struct {
	tenant, backup string
}

// newAssignSessionsCmd is agentmem keys assign-sessions: sessions created
// before the first key (no tenant) moved into a tenant, so that its keys
// reach them.
func newAssignSessionsCmd(a *cli.App, storeFlag *string) *cobra.Command {
	var f assignFlags
	cmd := &cobra.Command{
		Use:   "assign-sessions --tenant TENANT [SESSION...]",
		Short: "Move sessions created before the first key into a tenant",
		Long: `Assign-sessions moves sessions into a tenant, so that the tenant's keys
reach them. Sessions created while the server ran without keys belong to no
tenant, and once keys are on (a key always has a tenant) no request reaches
them: run this once after creating the first key. With no SESSION it moves
every session that has no tenant; with SESSION IDs, those of the sessions
without a tenant.

Each session keeps its ID, metadata, times, sequence numbers and steps, byte
for byte: it is copied into the tenant, indexed for recall there, and only
then deleted where it was. A session whose ID the tenant already uses is
not moved (and reported). Before anything changes, every session to move is
also written to the --backup file (as 'agentmem export' writes it; 'agentmem
import' reads it back). Run it while no server writes to these sessions.`,
		Example: `  agentmem keys create --tenant acme
  agentmem keys assign-sessions --tenant acme                  # every session without a tenant
  agentmem keys assign-sessions --tenant acme demo run-1       # these two`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAssignSessions(cmd, a, *storeFlag, f, args)
		},
	}
	cmd.Flags().StringVar(&f.tenant, "tenant", "", "the `TENANT` the sessions move into (required)")
	cmd.Flags().StringVar(&f.backup, "backup", "", "write the sessions, before they move, to this new `FILE` (default: backups/agentmem-assign-<time>.jsonl in agentmem's data directory, $XDG_DATA_HOME/agentmem or ~/.local/share/agentmem)")
	return cmd
}

func runAssignSessions(cmd *cobra.Command, a *cli.App, storeFlag string, f assignFlags, ids []string) error {
	ctx := cmd.Context()
	if f.tenant == "" {
		return cli.Usagef("--tenant is required")
	}
	if err := store.ValidateSession(&store.Session{ID: "x", Tenant: f.tenant, Retention: store.SessionRetention}); err != nil {
		return cli.Usagef("--tenant: %v", err)
	}
	for _, id := range ids {
		if err := store.ValidateID(id); err != nil {
			return cli.Usagef("SESSION %q: %v", id, err)
		}
	}
	storeURL, err := resolveStoreURL(a, storeFlag)
	if err != nil {
		return err
	}
	st, err := openSessionStore(ctx, a, storeURL, false)
	if err != nil {
		return err
	}
	defer st.Close()
	// The recall view follows the store's log, as serve's does: the moved
	// session's turns leave the old tenant's index and enter the new one's.
	follower, _, done, err := openIndexed(ctx, a, storeURL, st, embedFlags{})
	if err != nil {
		return err
	}
	defer done()

	if len(ids) == 0 {
		if ids, err = untenanted(ctx, st); err != nil {
			return cli.Failure(err)
		}
	}
	out := cmd.OutOrStdout()
	if len(ids) == 0 {
		fmt.Fprintln(out, "No session without a tenant: nothing to move.")
		return nil
	}
	path := f.backup
	if path == "" {
		dir, err := dataDir(a.LookupEnv, "backups", true)
		if err != nil {
			return cli.Failure(err)
		}
		path = filepath.Join(dir, "agentmem-assign-"+time.Now().UTC().Format("20060102T150405Z")+".jsonl")
	}
	backup, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return cli.Failure(fmt.Errorf("the backup file: %w", err))
	}
	defer backup.Close()
	var failed error
	moved := 0
	for _, id := range ids {
		s, err := store.AssignTenant(ctx, st, "", id, f.tenant, backup)
		if err == nil {
			err = backup.Sync() // the backup is on disk before the next session is deleted
		}
		if err != nil {
			if errors.Is(err, agentmem.ErrNotFound) {
				err = fmt.Errorf("no such session")
			}
			fmt.Fprintf(out, "%s: failed: %v\n", id, err)
			failed = errors.Join(failed, err)
			continue
		}
		moved++
		fmt.Fprintf(out, "%s: moved into tenant %s (%d entries)\n", id, s.Tenant, s.LastSeq)
	}
	if moved > 0 {
		if err := follower.Sync(ctx); err != nil {
			failed = errors.Join(failed, fmt.Errorf("the sessions moved, but indexing them for recall did not finish: %w (a server on this store finishes it)", err))
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%d of %d sessions moved into tenant %s; their previous state is in %s\n", moved, len(ids), f.tenant, path)
	if failed != nil {
		return cli.Failure(errors.New("some sessions did not move"))
	}
	return nil
}

// untenanted returns the IDs of the sessions that have no tenant, the
// damaged ones too (List leaves them out, and moving one fails, which
// names it, rather than leaving it behind unsaid).
func untenanted(ctx context.Context, st *store.Store) ([]string, error) {
	var ids []string
	req := store.ListRequest{PageSize: store.MaxPageSize}
	for {
		resp, err := st.List(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, s := range resp.Sessions {
			if s.Tenant == "" {
				ids = append(ids, s.ID)
			}
		}
		for _, d := range resp.Damaged {
			if d.Tenant == "" {
				ids = append(ids, d.ID)
			}
		}
		if resp.NextPageToken == "" {
			return ids, nil
		}
		req.PageToken = resp.NextPageToken
	}
}
