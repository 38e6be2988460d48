package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// The schema itself refuses a second holder of a key, whatever writes it:
// the ops keep one holder per key, and the index makes sure.
func TestDB_OneHolderPerKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keyed := func(n int) store.Job {
		j := job(n)
		j.UniqueKey = "k"
		return j
	}
	b.apply(t, store.InsertJob(keyed(1)), store.InsertJob(keyed(2)))
	// With the store's busy timeout: its writer may hold the lock a
	// moment (maintenance after a commit), most often on a loaded machine.
	raw, err := sql.Open("sqlite", dsn(filepath.Join(b.dir, FileName), 1<<20, false))
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.ExecContext(b.ctx, `UPDATE jobs SET unique_holder = 1 WHERE id = ?`, id(1))
	require.ErrorContains(t, err, "UNIQUE constraint failed")

	var holders int
	require.NoError(t, b.db.rdb.QueryRowContext(b.ctx,
		`SELECT count(*) FROM jobs WHERE unique_key = 'k' AND unique_holder = 1`).Scan(&holders))
	require.Equal(t, 1, holders)

	// Jobs without a key are in neither unique index.
	b.apply(t, store.InsertJob(job(3)))
	var indexed int
	require.NoError(t, b.db.rdb.QueryRowContext(b.ctx,
		`SELECT count(*) FROM jobs INDEXED BY jobs_unique WHERE unique_key IS NOT NULL`).Scan(&indexed))
	require.Equal(t, 2, indexed)
}
