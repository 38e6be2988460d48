package postgres

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/postgres/pgtest"
)

// TestDB_CompactWaitsForOlderSnapshots: rows deleted while an older
// transaction runs cannot go; Compact waits for it to end instead of
// rewriting them. The transaction holds no lock of the jobs' tables (which
// would hold VACUUM FULL off anyway).
func TestDB_CompactWaitsForOlderSnapshots(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	t.Run("Snapshot", func(t *testing.T) {
		testCompactWaitsFor(t, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, `SELECT 1`)
	})
	// An idle transaction with an xid keeps the rows deleted after it began
	// though it holds no snapshot between its statements.
	t.Run("IdleWithXID", func(t *testing.T) {
		testCompactWaitsFor(t, pgx.TxOptions{}, `SELECT pg_current_xact_id()`)
	})
}

// testCompactWaitsFor deletes rows while a transaction of opts that ran
// query before the deletes stays open.
func testCompactWaitsFor(t *testing.T, opts pgx.TxOptions, query string) {
	db := open(t)
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	big := bytes.Repeat([]byte("x"), 8<<10)
	var ins, dels []store.Op
	for n := range 200 {
		id := fmt.Sprintf("0job%021d", n)
		ins = append(ins, store.InsertJob(store.Job{ID: id, Queue: "q", Type: "t", Status: store.Ready, Payload: big}))
		if n > 0 {
			dels = append(dels, store.DeleteJob(id))
		}
	}
	require.NoError(t, db.Append(ins...).Wait(ctx))
	require.NoError(t, db.Compact(ctx))
	full, _ := db.Sizes()

	older, err := db.pool.BeginTx(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = older.Rollback(ctx) })
	_, err = older.Exec(ctx, query)
	require.NoError(t, err)
	require.NoError(t, db.Append(dels...).Wait(ctx))

	done := make(chan error, 1)
	go func() { done <- db.Compact(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("compact returned while an older transaction was open: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, older.Rollback(ctx))
	require.NoError(t, <-done)
	data, _ := db.Sizes()
	require.Less(t, data, full/2, "the deleted rows went once the older transaction ended")
}
