package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

func fastMaintenance(o *Options) {
	o.Maintenance = Maintenance{
		Interval:         10 * time.Millisecond,
		WALTruncateBytes: 512 << 10,
		TruncateWait:     50 * time.Millisecond,
		VacuumPages:      64,
	}
}

// bigJob is a job whose payload fills about a page.
func bigJob(n int) store.Job {
	j := job(n)
	j.Payload = []byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, n, strings.Repeat("x", 3000)))
	return j
}

// steppedClock is a clock that moves only when the test says so.
type steppedClock struct{ ns atomic.Int64 }

func newSteppedClock() *steppedClock {
	c := &steppedClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *steppedClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *steppedClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// TestMaintenance_WALStaysBounded drives the writer's storage care with a
// stepped clock, so that each step is a decision and not a race: a WAL past
// the bound is emptied by a TRUNCATE checkpoint when maintenance falls due;
// a reader holding an old snapshot keeps it from finishing (the writer then
// backs off instead of stalling again); once the reader is gone the next
// due maintenance empties it.
func TestMaintenance_WALStaysBounded(t *testing.T) {
	t.Parallel()
	clk := newSteppedClock()
	b := setup(t, fastMaintenance, func(o *Options) {
		o.Maintenance.Interval = time.Minute // only the stepped clock makes it due
		o.now = clk.now
	})
	limit := b.db.opts.Maintenance.WALTruncateBytes
	wal := func() int64 { _, w := b.db.Sizes(); return w }
	n := 0
	// growWAL writes until the WAL is past the bound; no maintenance falls
	// due meanwhile, as the clock stands still.
	growWAL := func() {
		for wal() <= 2*limit {
			n++
			b.apply(t, store.InsertJob(bigJob(n)))
		}
	}
	// maintainOnce makes maintenance due and has the writer run it: it
	// runs after a commit, and the writer takes the next group only once
	// it is done.
	maintainOnce := func() {
		clk.advance(time.Minute)
		n++
		b.apply(t, store.InsertJob(bigJob(n)))
		b.apply(t, store.DeleteJob(id(n)))
	}

	growWAL()
	maintainOnce()
	require.Less(t, wal(), limit, "a due maintenance truncates a WAL past its bound")

	// A reader pins an old snapshot: the TRUNCATE checkpoint cannot finish.
	conn, err := sql.Open("sqlite", dsn(b.db.path, 1<<20, true))
	require.NoError(t, err)
	defer conn.Close()
	tx, err := conn.BeginTx(b.ctx, nil)
	require.NoError(t, err)
	var count int
	require.NoError(t, tx.QueryRow("SELECT count(*) FROM jobs").Scan(&count))
	growWAL()
	maintainOnce()
	require.Greater(t, wal(), 2*limit, "the reader keeps the WAL")
	require.Equal(t, maxTruncateBackoff, b.db.maint.truncateBackoff, "the writer backs off after a TRUNCATE that found a reader")

	require.NoError(t, tx.Rollback())
	maintainOnce()
	require.Less(t, wal(), limit, "the WAL is truncated once the reader is gone")
	require.Zero(t, b.db.maint.truncateBackoff, "a TRUNCATE that finished ends the back-off")
}

// TestMaintenance_TruncatesOnItsOwnSchedule: with the real clock, the
// writer runs its storage care by itself, and empties a WAL past the bound
// once no reader holds it (the bound on the wait is generous: the interval
// is 10ms and the back-off at most 5s).
func TestMaintenance_TruncatesOnItsOwnSchedule(t *testing.T) {
	t.Parallel()
	b := setup(t, fastMaintenance)
	limit := b.db.opts.Maintenance.WALTruncateBytes
	wal := func() int64 { _, w := b.db.Sizes(); return w }
	// A reader keeps the WAL from being emptied while it grows.
	conn, err := sql.Open("sqlite", dsn(b.db.path, 1<<20, true))
	require.NoError(t, err)
	defer conn.Close()
	tx, err := conn.BeginTx(b.ctx, nil)
	require.NoError(t, err)
	var count int
	require.NoError(t, tx.QueryRow("SELECT count(*) FROM jobs").Scan(&count))
	for n := 1; wal() <= limit; n++ {
		b.apply(t, store.InsertJob(bigJob(n)))
	}
	require.NoError(t, tx.Rollback())
	require.Eventually(t, func() bool { return wal() < limit }, 30*time.Second, 5*time.Millisecond,
		"the writer truncates the WAL on its own")
}

func TestMaintenance_ReturnsFreePages(t *testing.T) {
	t.Parallel()
	b := setup(t, fastMaintenance)
	var ops []store.Op
	for n := range 2000 {
		ops = append(ops, store.InsertJob(bigJob(n)))
	}
	b.apply(t, ops...)
	b.apply(t, store.DeleteEverything())
	full, _ := b.db.Sizes()
	require.Eventually(t, func() bool {
		size, _ := b.db.Sizes()
		return size < full/4
	}, 10*time.Second, 10*time.Millisecond, "free pages go back to the file system (was %d bytes)", full)
}

func TestMaintenance_OnCommitSeesGroupCommits(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	var mu sync.Mutex
	var infos []CommitInfo
	b := setup(t, func(o *Options) {
		o.startGate = gate
		o.OnCommit = func(c CommitInfo) {
			mu.Lock()
			defer mu.Unlock()
			infos = append(infos, c)
		}
	})
	p1 := b.db.Append(store.InsertJob(job(1)))
	p2 := b.db.Append(store.InsertJob(job(2)), store.InsertJob(job(3)))
	close(gate)
	require.NoError(t, p1.Wait(b.ctx))
	require.NoError(t, p2.Wait(b.ctx))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(infos) == 1 }, 5*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, infos[0].Groups)
	require.Equal(t, 3, infos[0].Ops)
	require.False(t, infos[0].Failed)
	require.Positive(t, infos[0].Duration)
}

// The greatest job ID survives the jobs: reset, close, reopen.
func TestDB_MaxJobIDOutlivesJobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	maxID := func(db *DB) string {
		var got string
		require.NoError(t, db.Load(ctx, store.Loader{Start: func(s store.LoadStart) error { got = s.MaxID; return nil }}))
		return got
	}
	db, err := Open(ctx, dir, quiet())
	require.NoError(t, err)
	require.Empty(t, maxID(db))
	require.NoError(t, db.Append(store.InsertJob(job(7)), store.InsertJob(job(3))).Wait(ctx))
	require.Equal(t, id(7), maxID(db))
	require.NoError(t, db.Append(store.DeleteEverything()).Wait(ctx))
	require.NoError(t, db.Close())

	db, err = Open(ctx, dir, quiet())
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, id(7), maxID(db), "the high-water mark is saved at close")
}

// TestCheckpointer_CopiesBesideTheWriter: with the writer's own care never
// due and SQLite's automatic checkpoint off, the checkpointer copies the
// WAL while the writer commits back to back, and the writer's restart
// checkpoints keep the WAL file near RestartPages however much is written.
func TestCheckpointer_CopiesBesideTheWriter(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *Options) {
		o.Maintenance = Maintenance{Interval: time.Hour, CheckpointPace: time.Millisecond, RestartPages: 64}
	})
	// Four producers that each wait for their commit: many transactions
	// of a few groups each, back to back.
	const jobs, group, producers = 6000, 5, 4
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1 + p*group; n <= jobs; n += producers * group {
				ops := make([]store.Op, group)
				for k := range ops {
					ops[k] = store.InsertJob(bigJob(n + k))
				}
				if err := b.db.Append(ops...).Wait(b.ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
	var count int
	require.NoError(t, b.db.rdb.QueryRowContext(b.ctx, "SELECT count(*) FROM jobs").Scan(&count))
	require.Equal(t, jobs, count)

	dbBytes, walBytes := b.db.Sizes()
	require.Positive(t, b.db.ckpt.passes.Load(), "the checkpointer ran")
	require.Positive(t, b.db.restarts.Load(), "the writer restarted the WAL")
	// The WAL file is as long as the WAL ever was. Without restarts it
	// would hold every page written, more than the database file's.
	t.Logf("database %d bytes, WAL %d bytes, %d passes, %d restarts", dbBytes, walBytes, b.db.ckpt.passes.Load(), b.db.restarts.Load())
	require.Greater(t, dbBytes, int64(jobs*1000), "the pages reached the database file")
	require.Less(t, walBytes, dbBytes*3/4, "the WAL restarted instead of growing")
}

// TestCheckpointer_StepsAsideForTruncate: a compaction's TRUNCATE
// checkpoint waits for the checkpointer's pass instead of finding the
// checkpoint lock taken, while the writer commits back to back.
func TestCheckpointer_StepsAsideForTruncate(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *Options) {
		o.Maintenance = Maintenance{Interval: time.Hour, CheckpointPace: time.Millisecond, RestartPages: 1 << 20}
	})
	ctx, stop := context.WithCancel(b.ctx)
	defer stop()
	wrote := make(chan error, 1)
	go func() {
		for n := 1; ctx.Err() == nil; n++ {
			if err := b.db.Append(store.InsertJob(bigJob(n))).Wait(b.ctx); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	for range 20 {
		require.NoError(t, b.db.Compact(b.ctx))
	}
	stop()
	require.NoError(t, <-wrote)
	require.Positive(t, b.db.ckpt.passes.Load())
}
