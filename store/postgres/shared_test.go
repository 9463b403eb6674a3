package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/agentmem/store/internal/sqlstore"
)

// The tests of this package name functions of the session store that
// package sqlstore now holds for both SQL backends, and one the store no
// longer needs.
var isStoreErr = sqlstore.IsStoreErr

// rollback ends a transaction a test began by hand, even when the test's
// context has ended.
func rollback(tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = tx.Rollback(ctx)
}
