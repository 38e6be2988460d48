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
// transaction holds a snapshot cannot go; Compact waits for it to end
// instead of rewriting them.
func TestDB_CompactWaitsForOlderSnapshots(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
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

	// A snapshot from before the deletes, of a transaction that holds no
	// lock of the jobs' tables (which would hold VACUUM FULL off anyway).
	reader, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	require.NoError(t, err)
	t.Cleanup(func() { _ = reader.Rollback(ctx) })
	_, err = reader.Exec(ctx, `SELECT 1`)
	require.NoError(t, err)
	require.NoError(t, db.Append(dels...).Wait(ctx))

	done := make(chan error, 1)
	go func() { done <- db.Compact(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("compact returned while an older snapshot was held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, reader.Rollback(ctx))
	require.NoError(t, <-done)
	data, _ := db.Sizes()
	require.Less(t, data, full/2, "the deleted rows went once the snapshot ended")
}
