package sqlindex

import (
	"encoding/json"
	"strconv"

	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/recall"
)

// sqlText is the SQL that SQLite and PostgreSQL spell differently, all of
// it in one place.
type sqlText struct {
	// lock takes the tenant's ($1) lock for the transaction; "" for none
	// (SQLite: one writer). On PostgreSQL it is the tenant's row of
	// recall_tenants, created if missing. It is one statement that inserts
	// or locks, so that a writer waiting for a row that another deletes
	// inserts it anew rather than going on unlocked.
	lock string
	// addStats adds to a tenant's ($1) document count ($2) and total length
	// ($3). dropStats deletes the statistics of a tenant left empty. On
	// PostgreSQL it deletes its rows of recall_df too, which its df_version,
	// gone with its row, no longer vouches for. readStats reads them, and
	// tenants lists the tenants with documents.
	addStats, dropStats, readStats, tenants string
	// collate follows a text expression in an ORDER BY or a comparison to
	// make it bytewise. That is SQLite's default; PostgreSQL's default
	// collation may be a locale's.
	collate string
	// noVector is a NULL of the embedding column's type, for a query
	// that does not read the embeddings.
	noVector string
	// inList is the condition, following a column, that the column is
	// one of a list, parameter $n, and list the argument of a list.
	inList func(n int) string
	list   func([]string) any
	// vector is the argument of an embedding (nil: NULL), and vecDest the
	// scan destination of the embedding column.
	vector  func([]float32) any
	vecDest func(v *vecScan) any
}

// vecScan holds a scanned embedding column, in either database's form.
type vecScan struct {
	b []byte    // SQLite: recall.EncodeVector's
	f []float32 // PostgreSQL: real[]
}

// vector returns the embedding; nil for NULL.
func (v *vecScan) vector() ([]float32, error) {
	if v.b != nil {
		return recall.DecodeVector(v.b)
	}
	if len(v.f) == 0 {
		return nil, nil
	}
	return v.f, nil
}

func textOf(d *sqldb.Dialect) *sqlText {
	if d.IsSQLite() {
		return statsText(&sqlText{
			noVector: `NULL`,
			inList:   func(n int) string { return ` IN (SELECT value FROM json_each($` + strconv.Itoa(n) + `))` },
			list: func(ids []string) any {
				j, _ := json.Marshal(ids)
				return string(j)
			},
			vector:  func(v []float32) any { return recall.EncodeVector(v) },
			vecDest: func(v *vecScan) any { return &v.b },
		}, "recall_stats")
	}
	s := statsText(&sqlText{
		lock:     `INSERT INTO recall_tenants (tenant) VALUES ($1) ON CONFLICT (tenant) DO UPDATE SET n = recall_tenants.n`,
		collate:  ` COLLATE "C"`,
		noVector: `NULL::real[]`,
		inList:   func(n int) string { return ` = ANY($` + strconv.Itoa(n) + `)` },
		list:     func(ids []string) any { return ids },
		vector: func(v []float32) any {
			if len(v) == 0 {
				return nil
			}
			return v
		},
		vecDest: func(v *vecScan) any { return &v.f },
	}, "recall_tenants")
	s.dropStats = `WITH gone AS (` + s.dropStats + ` RETURNING tenant)
		DELETE FROM recall_df WHERE tenant = $1 AND EXISTS (SELECT 1 FROM gone)`
	return s
}

// statsText sets the statements on the statistics table.
func statsText(s *sqlText, table string) *sqlText {
	s.addStats = `INSERT INTO ` + table + ` (tenant, n, total_len) VALUES ($1, $2, $3)
		ON CONFLICT (tenant) DO UPDATE SET n = ` + table + `.n + excluded.n, total_len = ` + table + `.total_len + excluded.total_len`
	s.dropStats = `DELETE FROM ` + table + ` WHERE tenant = $1 AND n <= 0`
	s.readStats = `SELECT n, total_len FROM ` + table + ` WHERE tenant = $1`
	s.tenants = `SELECT tenant FROM ` + table + ` WHERE n > 0 ORDER BY tenant` + s.collate
	return s
}
