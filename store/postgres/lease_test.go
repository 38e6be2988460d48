package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/postgres/pgtest"
)

// leasePool connects to a new migrated schema and returns its URL too.
func leasePool(t *testing.T) (string, func(holder string, ttl time.Duration) *Lease) {
	t.Helper()
	url := pgtest.Schema(t)
	ctx := context.Background()
	pool, err := NewPool(ctx, url, 2, nil)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, Migrate(ctx, pool, slog.New(slog.DiscardHandler)))
	return url, func(holder string, ttl time.Duration) *Lease {
		return NewLease(pool, holder, "http://"+holder, "", ttl)
	}
}

// expire ends the current lease at once, as the passing of its time would.
func expire(t *testing.T, url string) {
	t.Helper()
	db := open(t, func(o *Options) { o.URL = url })
	defer db.Close()
	_, err := db.pool.Exec(context.Background(), `UPDATE leader SET expires_at = now() - interval '1 second'`)
	require.NoError(t, err)
}

func TestLease_Acquire(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	ctx := context.Background()
	url, lease := leasePool(t)
	a, b := lease("a", time.Minute), lease("b", time.Minute)

	st, err := a.Acquire(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, LeaseState{Holder: "a", URL: "http://a", Term: 1, Held: true}, st)

	st, err = b.Acquire(ctx, 0)
	require.NoError(t, err)
	require.InDelta(t, time.Minute, st.Left, float64(10*time.Second), "the lease runs on for about its duration")
	st.Left = 0
	require.Equal(t, LeaseState{Holder: "a", URL: "http://a", Term: 1}, st, "a candidate waits for the lease to expire")

	st, err = a.Acquire(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, LeaseState{Holder: "a", URL: "http://a", Term: 1, Held: true}, st, "the holder renews its term")

	expire(t, url)
	st, err = b.Acquire(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, LeaseState{Holder: "b", URL: "http://b", Term: 2, Held: true}, st, "an expired lease goes to the next term")

	st, err = a.Acquire(ctx, 1)
	require.NoError(t, err)
	st.Left = 0
	require.Equal(t, LeaseState{Holder: "b", URL: "http://b", Term: 2}, st, "a deposed holder cannot renew its old term")

	require.NoError(t, b.Release(ctx, 2))
	st, err = a.Acquire(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, LeaseState{Holder: "a", URL: "http://a", Term: 3, Held: true}, st, "a released lease is free at once")
}

func TestDB_Fence(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	ctx := context.Background()
	url, lease := leasePool(t)
	_, err := lease("a", time.Minute).Acquire(ctx, 0)
	require.NoError(t, err)
	var logs bytes.Buffer // written by the writer goroutine, read once the DB is closed
	db := open(t, func(o *Options) {
		o.URL = url
		o.Fence = &Fence{Holder: "a", Term: 1}
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	defer db.Close()

	kept := store.Job{ID: "0job000000000000000000001", Type: "t", Queue: "q", Status: store.Ready, ReadyAt: 1}
	require.NoError(t, db.Append(store.InsertJob(kept)).Wait(ctx), "the holder of the lease writes")

	expire(t, url)
	_, err = lease("b", time.Minute).Acquire(ctx, 0)
	require.NoError(t, err)

	late := store.Job{ID: "0job000000000000000000002", Type: "t", Queue: "q", Status: store.Ready, ReadyAt: 1}
	err = db.Append(store.InsertJob(late), store.SetStatus(kept.ID, store.InFlight, 5)).Wait(ctx)
	require.ErrorIs(t, err, ErrFenced, "a deposed leader's writes fail")
	require.ErrorIs(t, err, store.ErrUnavailable)

	require.NoError(t, db.Close())
	fenced := logLine(t, logs.String(), "write fenced")
	require.EqualValues(t, 1, fenced["term"], "%v", fenced)
	require.Equal(t, "a", fenced["holder"])
	require.ElementsMatch(t, []any{late.ID, kept.ID}, fenced["jobs"], "the line names the jobs of the refused write")

	reader := open(t, func(o *Options) { o.URL = url })
	defer reader.Close()
	_, err = reader.GetJob(ctx, late.ID, 0)
	require.ErrorIs(t, err, store.ErrNotFound, "nothing of the fenced transaction is written")
	got, err := reader.GetJob(ctx, kept.ID, 0)
	require.NoError(t, err)
	require.Equal(t, store.Ready, got.Status)
}

// writeUnderWay is a leader's write transaction under way, as long as the
// test likes: "a" holds the lease of a schema of its own (url, lease) for a
// minute, and tx, of db on that schema, has passed the fence, so it holds
// its share lock on the lease's row until it ends (at the latest when the
// test does).
func writeUnderWay(t *testing.T) (url string, lease func(string, time.Duration) *Lease, db *DB, tx pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	url, lease = leasePool(t)
	_, err := lease("a", time.Minute).Acquire(ctx, 0)
	require.NoError(t, err)
	db = open(t, func(o *Options) { o.URL = url })
	t.Cleanup(func() { _ = db.Close() })
	tx, err = db.pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	_, err = tx.Exec(ctx, `SELECT zizq_fence('a', 1)`)
	require.NoError(t, err)
	return url, lease, db, tx
}

// A takeover waits for the write transactions under way: each holds a
// share lock on the lease row, the takeover updates the row.
func TestDB_FenceSerialisesWithTakeover(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	ctx := context.Background()
	url, lease, db, tx := writeUnderWay(t)
	expired := make(chan struct{})
	go func() {
		defer close(expired)
		expire(t, url)
	}()
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE leader%'`).Scan(&waiting))
		return waiting >= 1
	}, 10*time.Second, 20*time.Millisecond, "the update of the lease waits for the write under way")
	select {
	case <-expired:
		t.Fatal("the lease changed under a write transaction")
	default:
	}
	require.NoError(t, tx.Commit(ctx))
	<-expired

	st, err := lease("b", time.Minute).Acquire(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Term)
}

// logLine returns the first JSON log line of logs whose message starts
// with msg.
func logLine(t *testing.T, logs, msg string) map[string]any {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && strings.HasPrefix(fmt.Sprint(m["msg"]), msg) {
			return m
		}
	}
	t.Fatalf("no log line %q in:\n%s", msg, logs)
	return nil
}

// A leader stopped inside a write transaction holds its share lock on the
// lease's row: the database ends the transaction a fifth of the lease
// after it went idle, so the next leader takes over that soon after the
// lease expires, whatever the lease (not after a fixed 2 s).
func TestLease_FrozenTransactionHoldsTakeoverOffAFifthOfTheLease(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	ctx := context.Background()
	const ttl = 500 * time.Millisecond
	url, lease := leasePool(t)
	_, err := lease("a", ttl).Acquire(ctx, 0)
	require.NoError(t, err)
	db := open(t, func(o *Options) { o.URL = url; o.Fence = &Fence{Holder: "a", Term: 1, Lease: ttl} })
	defer db.Close()

	// The stopped leader: its write transaction passed the fence, then
	// nothing.
	tx, err := db.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	fence := &pgx.Batch{}
	db.queueFence(fence)
	require.NoError(t, tx.SendBatch(ctx, fence).Close())
	// The limit the frozen transaction runs under is read from the
	// database, not inferred from how long a takeover took: a timing
	// bound that tells 100 ms from 2 s flakes on a loaded machine.
	var idle string
	require.NoError(t, tx.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&idle))
	require.Equal(t, "100ms", idle, "a write transaction may sit idle a fifth of the lease")
	start := time.Now()

	b := lease("b", ttl)
	for {
		st, err := b.Acquire(ctx, 0)
		if err == nil && st.Held {
			require.EqualValues(t, 2, st.Term)
			break
		}
		require.Less(t, time.Since(start), 10*time.Second, "no takeover: %v", err)
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, 100*time.Millisecond, FrozenTxLimit(ttl))
	require.Equal(t, 2*time.Second, FrozenTxLimit(10*time.Second), "the default lease keeps 2 s")
}

// A candidate's attempt while the lease runs neither waits for the
// leader's write transactions under way nor holds up the leader's next
// ones: it only reads the row.
func TestLease_CandidateDoesNotWaitForTheLeadersWrites(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	ctx := context.Background()
	_, lease, _, _ := writeUnderWay(t)

	st, err := lease("b", time.Minute).Acquire(ctx, 0)
	require.NoError(t, err, "the candidate's attempt does not queue for the row")
	require.False(t, st.Held)
	require.Equal(t, "a", st.Holder)
	require.Positive(t, st.Left)
}

// A read transaction of a leader's store (a backup streaming to a slow
// client) may sit idle longer than a write: it holds no lock on the lease.
func TestDB_FencedReadsKeepNoIdleLimit(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	ctx := context.Background()
	url, lease := leasePool(t)
	_, err := lease("a", time.Minute).Acquire(ctx, 0)
	require.NoError(t, err)
	db := open(t, func(o *Options) { o.URL = url; o.Fence = &Fence{Holder: "a", Term: 1, Lease: 500 * time.Millisecond} })
	defer db.Close()

	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	var n int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&n))
	time.Sleep(400 * time.Millisecond) // four times the write transactions' limit
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&n), "the read transaction is still there")
	require.NoError(t, tx.Commit(ctx))
}
