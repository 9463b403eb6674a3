package sqldb

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// ScanTimestamptz implements pgtype.TimestamptzScanner: pgx scans a
// timestamptz into a ScanTime destination directly, rather than through
// sql.Scanner, which boxes every value it scans (an allocation a time
// column of a row).
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
