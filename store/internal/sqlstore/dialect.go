package sqlstore

import (
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

// dialect is what the store's SQL says differently on SQLite and
// PostgreSQL; every query is otherwise written once, in PostgreSQL's
// form ($N placeholders, which sqldb rewrites for SQLite).
type dialect struct {
	*sqldb.Dialect
	// name prefixes the store's errors ("sqlite", "postgres").
	name string
	// timeNanos: times are INTEGER nanoseconds since the Unix epoch (the
	// SQLite schema's choice, older than sqldb's microseconds), not
	// timestamptz.
	timeNanos bool
	// noNUL: text values cannot hold the byte 0 (PostgreSQL).
	noNUL bool
	// Row locks, "" where writers are serialized anyway (SQLite).
	forUpdate, forNoKeyUpdate, forKeyShare string
	// least is the SQL function of the smaller of two values.
	least string
	// noLimit is the LIMIT argument that means none.
	noLimit any
	// kindPrefix selects as much of a step's body as storekit.EncodedKind
	// needs: its first storekit.KindPrefixBytes bytes when it starts with its
	// type (as store.EncodeStep writes it), else all of it.
	kindPrefix string
	// notAmendment is the condition that a compaction entry is a full
	// record: its body does not begin with store.AmendPrefix.
	notAmendment string
	// The statements that record changes in the feed, "" where triggers
	// do (SQLite): appends ($1 session, $2 tenant, $3 the seqs), a branch
	// created ($1, $2, $3 its fork point), a session deleted ($1, $2).
	feedAppends, feedFork, feedDelete string
	// feed is how the feed is ordered and read.
	feed feedDialect
	// pingConsumer is the consumer name of Ping's probe write (see Ping).
	pingConsumer string
}

// The consumer names of Ping's probe write. No consumer can have them
// (a valid name does not begin with "#"). SQLite's is 64 KiB long, so that
// the probe needs room the database does not have while it is full: new
// pages of the file, and frames of its WAL beyond those a failed write
// left. A probe of a few bytes would fit in a page that has room, and call
// the store ready while a step's append still fails.
// PostgreSQL's is short: an index entry holds at most a few kilobytes,
// and its disk fills for every database of the server at once.
var (
	sqlitePingConsumer   = "#ping" + strings.Repeat(".", 64<<10)
	postgresPingConsumer = "#ping"
)

// dialectOf returns the store's dialect for a database's.
func dialectOf(d *sqldb.Dialect) *dialect {
	if d.IsSQLite() {
		return &dialect{
			Dialect:      d,
			name:         "sqlite",
			timeNanos:    true,
			least:        "min",
			noLimit:      -1,
			kindPrefix:   kindPrefix(`x'` + hex.EncodeToString([]byte(`{"type":"`)) + `'`),
			notAmendment: notAmendment(`x'` + hex.EncodeToString([]byte(store.AmendPrefix)) + `'`),
			feed:         sqliteFeed,
			pingConsumer: sqlitePingConsumer,
		}
	}
	const feedInsert = FeedAppendSQL + ` `
	return &dialect{
		Dialect:        d,
		name:           "postgres",
		noNUL:          true,
		forUpdate:      " FOR UPDATE",
		forNoKeyUpdate: " FOR NO KEY UPDATE",
		forKeyShare:    " FOR KEY SHARE",
		least:          "LEAST",
		noLimit:        nil,
		kindPrefix:     kindPrefix(`'\x` + hex.EncodeToString([]byte(`{"type":"`)) + `'::bytea`),
		notAmendment:   notAmendment(`'\x` + hex.EncodeToString([]byte(store.AmendPrefix)) + `'::bytea`),
		feedAppends:    feedInsert,
		feedFork:       feedInsert + `VALUES ('fork', $1, $2, $3)`,
		feedDelete:     feedInsert + `VALUES ('delete', $1, $2, 0)`,
		feed:           postgresFeed,
		pingConsumer:   postgresPingConsumer,
	}
}

// FeedAppendSQL starts PostgreSQL's statement that records changes in
// the feed, followed by VALUES of (kind, session_id, tenant, seq) (see
// FeedAppendValues). The xid is the column's default,
// pg_current_xact_id(): on Citus the coordinator evaluates it, so every
// change carries its coordinator transaction's ID.
const FeedAppendSQL = `INSERT INTO feed (kind, session_id, tenant, seq)`

// FeedAppendValues is the VALUES list of the appends of entries to one
// session, in the order of seqs: the session's ID is parameter id, its
// tenant parameter tenant, and the seqs parameters first, first+stride,
// first+2*stride, ....
//
// A VALUES list, not a SELECT FROM unnest(seqs): on Citus, an INSERT ...
// SELECT with another write in its transaction goes through a connection
// of its own, so the transaction commits in two phases, its worker after
// the coordinator. A feed reader could then see the coordinator's
// transaction ended before its rows are visible, and pass them by.
// TestCitusSingleShard fails on two-phase commits.
func FeedAppendValues(id, tenant, first, stride, n int) string {
	var b strings.Builder
	b.WriteString("VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("('append', $" + strconv.Itoa(id) + ", $" + strconv.Itoa(tenant) + ", $" + strconv.Itoa(first+stride*i) + "::bigint)")
	}
	return b.String()
}

func kindPrefix(typePrefix string) string {
	return fmt.Sprintf(`CASE WHEN substr(body, 1, 9) = %s THEN substr(body, 1, %d) ELSE body END`, typePrefix, storekit.KindPrefixBytes)
}

func notAmendment(amendPrefix string) string {
	return fmt.Sprintf(`substr(body, 1, %d) <> %s`, len(store.AmendPrefix), amendPrefix)
}

// in returns the condition that col is one of the values of list
// parameter $n, whose argument is d.ints or d.strings of the values.
func (d *dialect) in(col string, n int) string {
	p := "$" + strconv.Itoa(n)
	if d.IsSQLite() {
		return col + " IN (SELECT value FROM json_each(" + p + "))"
	}
	return col + " = ANY(" + p + ")"
}

// ints returns the argument of a list parameter of integers: a JSON
// array on SQLite, a bigint[] on PostgreSQL.
func (d *dialect) ints(v []int64) any {
	if !d.IsSQLite() {
		return v
	}
	b := make([]byte, 0, 2+8*len(v))
	b = append(b, '[')
	for i, n := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return string(append(b, ']'))
}

// strings returns the argument of a list parameter of strings: a JSON
// array on SQLite, a text[] on PostgreSQL.
func (d *dialect) strings(v []string) any {
	if !d.IsSQLite() {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // a []string always encodes
	}
	return string(b)
}

// time returns t as the argument of a time column; the zero time is NULL.
func (d *dialect) time(t time.Time) any {
	switch {
	case t.IsZero():
		return nil
	case d.timeNanos:
		return t.UnixNano()
	}
	return t.UTC()
}

// scanTime returns a scan destination for a time column of either form
// that sets *t, in UTC; NULL sets the zero time. (sqldb.ScanTime reads
// integers as microseconds; the store's SQLite schema keeps nanoseconds.)
func scanTime(t *time.Time) sql.Scanner { return sqldb.ScanNanoTime(t) }

// scanTimeNotNull returns a scan destination for a time column that is
// never NULL: t itself where the driver scans the column into a
// time.Time (PostgreSQL: no value boxed per row; the caller takes t's
// UTC), else scanTime(t).
func (d *dialect) scanTimeNotNull(t *time.Time) any {
	if d.timeNanos {
		return scanTime(t)
	}
	return t
}
