package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/agentmem/internal/pgdb"
)

// AsyncCommits names the database servers that acknowledge the store's
// commits before their WAL is on disk (synchronous_commit = off, as the
// store's connections see it). It checks the server the store connects to
// ("coordinator" on Citus, "server" otherwise). On a Citus coordinator it
// also checks each worker (host:port) as Citus's connections to it see
// it, in the store's database as its user. It returns nil when every
// server commits synchronously.
//
// On such a server an append is acknowledged before it is durable. A
// crash of the server loses the last commits (PostgreSQL's documented
// trade-off). On Citus a shard move loses an append committed just
// before its switch-over: the move waits for the WAL write position,
// which an asynchronous commit may not have reached. agentmem serve
// logs a warning at start when AsyncCommits names any server.
func (s *Store) AsyncCommits(ctx context.Context) ([]string, error) {
	var (
		own   string
		citus bool
	)
	b := &pgx.Batch{}
	b.Queue("SHOW synchronous_commit").QueryRow(func(r pgx.Row) error { return r.Scan(&own) })
	b.Queue("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')").QueryRow(func(r pgx.Row) error { return r.Scan(&citus) })
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, pgdb.Classify(err)
	}
	var async []string
	if own == "off" {
		name := "server"
		if citus {
			name = "coordinator"
		}
		async = append(async, name)
	}
	if !citus {
		return async, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT nodename, nodeport, success, result FROM run_command_on_workers($$SHOW synchronous_commit$$) ORDER BY nodename, nodeport`)
	if err != nil {
		return nil, pgdb.Classify(err)
	}
	var (
		host    string
		port    int
		ok      bool
		setting string
	)
	_, err = pgx.ForEachRow(rows, []any{&host, &port, &ok, &setting}, func() error {
		if !ok {
			return fmt.Errorf("postgres: reading synchronous_commit on worker %s:%d: %s", host, port, setting)
		}
		if setting == "off" {
			async = append(async, fmt.Sprintf("%s:%d", host, port))
		}
		return nil
	})
	if err != nil {
		return nil, pgdb.Classify(err)
	}
	return async, nil
}
