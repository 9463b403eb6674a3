package sqlite

import "github.com/agentmem/agentmem/store/internal/sqlstore"

// The tests of this package name functions of the session store that
// package sqlstore now holds for both SQL backends.
var isStoreErr = sqlstore.IsStoreErr
