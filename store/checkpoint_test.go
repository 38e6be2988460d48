package store

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
func bigJob(n int) Job {
	j := job(n)
	j.Payload = []byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, n, strings.Repeat("x", 3000)))
	return j
}

// writeLoop inserts (and deletes, to keep the table small) jobs until
// stopped, one small transaction after another, as a steady load does.
func writeLoop(t *testing.T, b *testBundle, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			ops := []Op{InsertJob(bigJob(n))}
			if n > 50 {
				ops = append(ops, DeleteJob(id(n-50)))
			}
			if err := b.db.Append(ops...).Wait(b.ctx); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	return &wg
}

func TestMaintenance_WALStaysBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, fastMaintenance)
	limit := b.db.opts.Maintenance.WALTruncateBytes
	stop := make(chan struct{})
	writers := writeLoop(t, b, stop)
	// Overlapping short reads all along: without TRUNCATE checkpoints the
	// WAL would rarely, if ever, restart.
	var reads atomic.Int64
	var readers sync.WaitGroup
	stopReads := make(chan struct{})
	var stopReadsOnce sync.Once
	endReads := func() { stopReadsOnce.Do(func() { close(stopReads) }); readers.Wait() }
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				case <-stopReads:
					return
				default:
				}
				_, err := b.db.CountJobs(b.ctx, Filter{})
				require.NoError(t, err)
				reads.Add(1)
			}
		}()
	}
	defer func() {
		close(stop)
		writers.Wait()
		endReads()
	}()

	wal := func() int64 { _, w := b.db.Sizes(); return w }
	// Steady load: the WAL stays within a few intervals' writes of the bound.
	var peak int64
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		peak = max(peak, wal())
	}
	require.Less(t, peak, 6*limit, "WAL under a steady load")
	require.Positive(t, reads.Load())

	// A long reader pins its snapshot: the WAL grows past the bound...
	conn, err := sql.Open("sqlite", dsn(b.db.path, 1<<20, true))
	require.NoError(t, err)
	defer conn.Close()
	tx, err := conn.BeginTx(b.ctx, nil)
	require.NoError(t, err)
	var n int
	require.NoError(t, tx.QueryRow("SELECT count(*) FROM jobs").Scan(&n))
	require.Eventually(t, func() bool { return wal() > 2*limit }, 10*time.Second, 5*time.Millisecond,
		"the WAL grows while a reader holds an old snapshot")
	// ...and shrinks back once the readers are gone, while the writes go
	// on. (A TRUNCATE needs a moment with no reader at all, which the
	// spinning short readers rarely leave on a loaded 2-core machine.)
	endReads()
	require.NoError(t, tx.Rollback())
	require.Eventually(t, func() bool { return wal() < limit }, 30*time.Second, 5*time.Millisecond,
		"the WAL is truncated once the reader is gone")
}

func TestMaintenance_ReturnsFreePages(t *testing.T) {
	t.Parallel()
	b := setup(t, fastMaintenance)
	var ops []Op
	for n := range 2000 {
		ops = append(ops, InsertJob(bigJob(n)))
	}
	b.apply(t, ops...)
	b.apply(t, DeleteEverything())
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
	p1 := b.db.Append(InsertJob(job(1)))
	p2 := b.db.Append(InsertJob(job(2)), InsertJob(job(3)))
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
	db, err := Open(ctx, dir, quiet())
	require.NoError(t, err)
	got, err := db.MaxJobID(ctx)
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, db.Append(InsertJob(job(7)), InsertJob(job(3))).Wait(ctx))
	got, err = db.MaxJobID(ctx)
	require.NoError(t, err)
	require.Equal(t, id(7), got)
	require.NoError(t, db.Append(DeleteEverything()).Wait(ctx))
	require.NoError(t, db.Close())

	db, err = Open(ctx, dir, quiet())
	require.NoError(t, err)
	defer db.Close()
	got, err = db.MaxJobID(ctx)
	require.NoError(t, err)
	require.Equal(t, id(7), got, "the high-water mark is saved at close")
}
