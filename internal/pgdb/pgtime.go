package pgdb

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/agentmem/agentmem/internal/sqldb"
)

// timeDest is Dialect's scan destination for a time column (its
// TimeDest): sqldb.ScanTime's, and pgx's own scanner of a timestamptz
// too.
type timeDest time.Time

func scanTime(t *time.Time) sql.Scanner { return (*timeDest)(t) }

// Scan implements sql.Scanner, as sqldb.ScanTime's destination does, for
// what pgx does not scan as a timestamptz.
func (d *timeDest) Scan(v any) error { return sqldb.ScanTime((*time.Time)(d)).Scan(v) }

// Value makes a timeDest usable as an argument too.
func (d *timeDest) Value() (driver.Value, error) { return time.Time(*d), nil }

// ScanTimestamptz implements pgtype.TimestamptzScanner. pgx scans a
// timestamptz into a timeDest directly, rather than through sql.Scanner,
// which boxes every value it scans: an allocation for each time column of
// a row.
func (d *timeDest) ScanTimestamptz(v pgtype.Timestamptz) error {
	switch {
	case !v.Valid:
		*d = timeDest(time.Time{})
	case v.InfinityModifier != pgtype.Finite:
		return errors.New("sqldb: cannot scan an infinite timestamp into a time")
	default:
		*d = timeDest(v.Time.UTC())
	}
	return nil
}
