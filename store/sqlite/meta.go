package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// MaxJobID returns the greatest job ID the store has ever held: the greater
// of the greatest stored ID and the saved high-water mark (which outlives
// deleted and purged jobs). "" when there has never been a job. The engine's
// ID generator observes it at start so that new IDs sort after every old
// one, even if the clock stepped back.
func (db *DB) MaxJobID(ctx context.Context) (string, error) {
	var stored, mark sql.NullString
	err := db.rdb.QueryRowContext(ctx, `SELECT (SELECT max(id) FROM jobs),
		(SELECT value FROM meta WHERE key = 'id_high_water')`).Scan(&stored, &mark)
	if err != nil {
		return "", fmt.Errorf("read greatest job id: %w", err)
	}
	return max(stored.String, mark.String), nil
}
