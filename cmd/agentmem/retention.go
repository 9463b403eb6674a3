package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentmem/agentmem/store"
)

// defaultPruneInterval is how often serve applies retention.
const defaultPruneInterval = 10 * time.Minute

// runRetention applies the store's retention every interval until ctx is
// done: expired sessions (TTL, single-run sessions past their expiry) are
// deleted. Failures are logged and retried at the next tick; several
// servers on one database may all run it (Prune is idempotent).
func runRetention(ctx context.Context, st *store.Store, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, interval)
		resp, err := st.Prune(pctx, store.PruneRequest{})
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("retention failed; retrying at the next interval", "err", err, "interval", interval)
		case err == nil && resp.SessionsDeleted > 0:
			log.Info("retention deleted expired sessions", "sessions", resp.SessionsDeleted)
		}
	}
}
