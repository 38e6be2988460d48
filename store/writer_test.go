package store

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gated makes the writer wait for the returned function before its first
// batch, so that everything appended until then lands in known batches.
func gated(gate chan struct{}) func(*Options) {
	return func(o *Options) { o.startGate = gate }
}

func TestAppend_InOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Separate groups, nobody waiting in between.
	b.db.Append(InsertJob(job(1)))
	b.db.Append(DeleteJob(id(1)))
	b.db.Append(InsertJob(job(2)))
	changed := job(2)
	changed.Queue, changed.Attempts = "other", 3
	b.db.Append(PutJob(changed))
	b.db.Append(SetStatus(id(2), InFlight, 42))
	require.NoError(t, b.db.Barrier(b.ctx))

	require.Equal(t, []string{id(2)}, b.ids(t))
	got, err := b.db.GetJob(b.ctx, id(2), 0)
	require.NoError(t, err)
	changed.Status, changed.DequeuedAt = InFlight, 42
	require.Equal(t, changed, got)
}

func TestAppend_ConcurrentAllCommitted(t *testing.T) {
	t.Parallel()
	b := setup(t)

	const goroutines, each = 50, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				errs <- b.db.Append(InsertJob(job(g*each + i))).Wait(b.ctx)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	n, err := b.db.CountJobs(b.ctx, Filter{})
	require.NoError(t, err)
	require.EqualValues(t, goroutines*each, n)
	// Group commit: far fewer transactions than groups is likely but not
	// guaranteed, so only the upper bound is asserted.
	require.LessOrEqual(t, b.db.txs.Load(), int64(goroutines*each))
}

func TestBarrier(t *testing.T) {
	t.Parallel()

	t.Run("SeesEverythingAppendedBefore", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i := range 200 {
			b.db.Append(InsertJob(job(i)))
		}
		require.NoError(t, b.db.Barrier(b.ctx))
		n, err := b.db.CountJobs(b.ctx, Filter{})
		require.NoError(t, err)
		require.EqualValues(t, 200, n)
	})

	t.Run("NothingPending", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx, cancel := context.WithCancel(b.ctx)
		cancel()
		require.NoError(t, b.db.Barrier(ctx)) // fast path does not wait
	})

	t.Run("ContextEnds", func(t *testing.T) {
		t.Parallel()
		gate := make(chan struct{})
		b := setup(t, gated(gate))
		p := b.db.Append(InsertJob(job(1)))
		ctx, cancel := context.WithTimeout(b.ctx, 20*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, b.db.Barrier(ctx), context.DeadlineExceeded)
		require.ErrorIs(t, p.Wait(ctx), context.DeadlineExceeded)
		close(gate)
		require.NoError(t, p.Wait(b.ctx))
	})
}

func TestAppend_GroupFailsAlone(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	b := setup(t, gated(gate))

	good1 := b.db.Append(InsertJob(job(1)))
	// Fails on its last op: the duplicate of job 1. Nothing of it may stay.
	bad := b.db.Append(InsertJob(job(2)), PutBudget(Budget{Key: "k", Allocation: 1}), AddError(ErrorRecord{JobID: id(2), Attempt: 1}), InsertJob(job(1)))
	good2 := b.db.Append(InsertJob(job(3)), SetStatus(id(1), InFlight, 7))
	close(gate)

	require.NoError(t, good1.Wait(b.ctx))
	err := bad.Wait(b.ctx)
	require.ErrorContains(t, err, "insert job "+id(1)+": ")
	require.ErrorContains(t, err, "UNIQUE constraint failed")
	require.NoError(t, good2.Wait(b.ctx))

	require.Equal(t, []string{id(1), id(3)}, b.ids(t))
	budgets, err := b.db.Budgets(b.ctx)
	require.NoError(t, err)
	require.Empty(t, budgets)
	j1, err := b.db.GetJob(b.ctx, id(1), 0)
	require.NoError(t, err)
	require.Equal(t, InFlight, j1.Status)
	// One batch transaction, then one per group.
	require.EqualValues(t, 4, b.db.txs.Load())
}

func TestAppend_BatchSizeBoundsTransactions(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	b := setup(t, gated(gate), func(o *Options) { o.BatchSize = 3 })

	var ps []*Pending
	n := 0
	add := func(size int) {
		ops := make([]Op, size)
		for i := range ops {
			ops[i] = InsertJob(job(n))
			n++
		}
		ps = append(ps, b.db.Append(ops...))
	}
	// Batches: [1 1 1] [1 1] [7] (one group is never split) [1 1].
	for _, size := range []int{1, 1, 1, 1, 1, 7, 1, 1} {
		add(size)
	}
	close(gate)
	for _, p := range ps {
		require.NoError(t, p.Wait(b.ctx))
	}
	require.Len(t, b.ids(t), n)
	require.EqualValues(t, 4, b.db.txs.Load())
}

func TestAppend_Coalesce(t *testing.T) {
	t.Parallel()

	t.Run("InsertThenDeleteInOneGroup", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.apply(t, InsertJob(job(1)), SetStatus(id(1), InFlight, 5),
			AddError(ErrorRecord{JobID: id(1), Attempt: 1, Message: "boom"}), DeleteJob(id(1)))
		require.Empty(t, b.ids(t))
		recs, _, err := b.db.ListErrors(b.ctx, id(1), 0, Asc, 10)
		require.NoError(t, err)
		require.Empty(t, recs)
	})

	t.Run("AcrossGroupsOfABatch", func(t *testing.T) {
		t.Parallel()
		gate := make(chan struct{})
		b := setup(t, gated(gate))
		ps := []*Pending{
			b.db.Append(InsertJob(job(1))),
			b.db.Append(SetStatus(id(1), InFlight, 5)),
			b.db.Append(InsertJob(job(2))),
			b.db.Append(DeleteJob(id(1))),
			b.db.Append(SetStatus(id(2), InFlight, 9)),
		}
		close(gate)
		for _, p := range ps {
			require.NoError(t, p.Wait(b.ctx))
		}
		require.EqualValues(t, 1, b.db.txs.Load())
		require.Equal(t, []string{id(2)}, b.ids(t))
		got, err := b.db.GetJob(b.ctx, id(2), 0)
		require.NoError(t, err)
		require.Equal(t, InFlight, got.Status)
		require.EqualValues(t, 9, got.DequeuedAt)
	})

	t.Run("DuplicateInsertStillFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.apply(t, InsertJob(job(1)))
		err := b.db.Append(InsertJob(job(1)), DeleteJob(id(1))).Wait(b.ctx)
		require.EqualError(t, err, "insert job "+id(1)+": job already exists")
		require.Equal(t, []string{id(1)}, b.ids(t))
	})

	t.Run("FoldDoesNotLeakIntoRetry", func(t *testing.T) {
		t.Parallel()
		gate := make(chan struct{})
		b := setup(t, gated(gate))
		b.db.Append(InsertJob(job(9)))
		insert := b.db.Append(InsertJob(job(1)))
		// Folded into job 1's insert in the batch, but this group fails,
		// so on the retry job 1 must be inserted as it was appended.
		bad := b.db.Append(SetStatus(id(1), InFlight, 5), InsertJob(job(9)))
		close(gate)
		require.NoError(t, insert.Wait(b.ctx))
		require.Error(t, bad.Wait(b.ctx))
		got, err := b.db.GetJob(b.ctx, id(1), 0)
		require.NoError(t, err)
		require.Equal(t, job(1), got)
	})
}

func TestCoalesce(t *testing.T) {
	t.Parallel()
	groups := func(gs ...[]Op) []*Pending {
		ps := make([]*Pending, len(gs))
		for i, ops := range gs {
			ps[i] = &Pending{ops: ops}
		}
		return ps
	}
	kinds := func(ops []Op) []opKind {
		ks := make([]opKind, len(ops))
		for i, op := range ops {
			ks[i] = op.kind
		}
		return ks
	}

	for name, tc := range map[string]struct {
		groups []*Pending
		want   []opKind
	}{
		"InsertDelete": {
			groups: groups([]Op{InsertJob(job(1))}, []Op{AddError(ErrorRecord{JobID: id(1)}), PutJob(job(1))}, []Op{DeleteJob(id(1))}),
			want:   []opKind{opProbeNew, opNone, opNone},
		},
		"DeleteWithoutInsert": {
			groups: groups([]Op{PutJob(job(1)), SetStatus(id(1), Ready, 0), DeleteJob(id(1)), SetStatus(id(1), Ready, 0)}),
			want:   []opKind{opPutJob, opDeleteJob, opSetStatus},
		},
		"DuplicateInsertNotCoalesced": {
			groups: groups([]Op{InsertJob(job(1)), InsertJob(job(1)), DeleteJob(id(1))}),
			want:   []opKind{opInsertJob, opInsertJob, opDeleteJob},
		},
		"NotAcrossDeleteEverything": {
			groups: groups([]Op{InsertJob(job(1)), DeleteEverything(), SetStatus(id(1), Ready, 0), DeleteJob(id(1))}),
			want:   []opKind{opInsertJob, opDeleteEverything, opSetStatus, opDeleteJob},
		},
		"NotAcrossRecover": {
			groups: groups([]Op{InsertJob(job(1)), recoverInFlight(new(int64)), SetStatus(id(1), InFlight, 0)}),
			want:   []opKind{opInsertJob, opRecoverInFlight, opSetStatus},
		},
		"OtherIDsUntouched": {
			groups: groups([]Op{InsertJob(job(1)), InsertJob(job(2)), DeleteJob(id(2)), SetStatus(id(3), Ready, 0)}),
			want:   []opKind{opInsertJob, opProbeNew, opSetStatus},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, kinds(coalesce(tc.groups)))
		})
	}

	t.Run("FoldsIntoPrivateCopy", func(t *testing.T) {
		t.Parallel()
		gs := groups([]Op{InsertJob(job(1))}, []Op{SetStatus(id(1), InFlight, 5), SetStatus(id(1), Ready, 0)})
		out := coalesce(gs)
		require.Equal(t, []opKind{opInsertJob}, kinds(out))
		want := job(1)
		want.Status, want.DequeuedAt = Ready, 5
		require.Equal(t, want, *out[0].job)
		require.Equal(t, job(1), *gs[0].ops[0].job)
	})
}

func TestClose(t *testing.T) {
	t.Parallel()

	t.Run("DrainsAppendedOps", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ctx := context.Background()
		db, err := Open(ctx, dir, withBatch(7))
		require.NoError(t, err)
		var ps []*Pending
		for i := range 300 {
			ps = append(ps, db.Append(InsertJob(job(i))))
		}
		require.NoError(t, db.Close())
		for _, p := range ps {
			require.NoError(t, p.Wait(ctx))
		}
		require.NoError(t, db.Close()) // idempotent

		db, err = Open(ctx, dir, quiet())
		require.NoError(t, err)
		defer db.Close()
		n, err := db.CountJobs(ctx, Filter{})
		require.NoError(t, err)
		require.EqualValues(t, 300, n)
	})

	t.Run("AppendAfterCloseFails", func(t *testing.T) {
		t.Parallel()
		db, err := Open(context.Background(), t.TempDir(), quiet())
		require.NoError(t, err)
		require.NoError(t, db.Close())
		err = db.Append(InsertJob(job(1))).Wait(context.Background())
		require.ErrorIs(t, err, ErrUnavailable)
		require.NoError(t, db.Barrier(context.Background()))
	})

	t.Run("RemovesWAL", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		db, err := Open(context.Background(), dir, quiet())
		require.NoError(t, err)
		require.NoError(t, db.Append(InsertJob(job(1))).Wait(context.Background()))
		require.NoError(t, db.Close())
		require.NoFileExists(t, filepath.Join(dir, FileName+"-wal"))
	})
}

func TestCommitModes(t *testing.T) {
	t.Parallel()
	const normal, full = 1, 2
	for name, tc := range map[string]struct {
		defaultMode, enqueueMode CommitMode
		wantInsert, wantOther    int
	}{
		"Buffered":         {Buffered, Buffered, normal, normal},
		"Fsync":            {Fsync, Fsync, full, full},
		"FsyncEnqueue":     {Buffered, Fsync, full, normal},
		"FsyncDefaultOnly": {Fsync, Buffered, normal, full},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(o *Options) { o.DefaultMode, o.EnqueueMode = tc.defaultMode, tc.enqueueMode })
			synchronous := func() int {
				var v int
				require.NoError(t, b.db.w.conn.QueryRowContext(b.ctx, "PRAGMA synchronous").Scan(&v))
				return v
			}
			require.Equal(t, map[CommitMode]int{Buffered: normal, Fsync: full}[tc.defaultMode], synchronous())

			// A group with an insert takes the enqueue mode, whatever else
			// it holds.
			b.apply(t, PutBudget(Budget{Key: "k"}), InsertJob(job(1)))
			require.Equal(t, tc.wantInsert, synchronous())
			b.apply(t, SetStatus(id(1), InFlight, 1))
			require.Equal(t, tc.wantOther, synchronous())
			b.apply(t, DeleteJob(id(1)))
			require.Equal(t, tc.wantOther, synchronous())
		})
	}

	t.Run("StrongestModeOfTheBatch", func(t *testing.T) {
		t.Parallel()
		gate := make(chan struct{})
		b := setup(t, gated(gate), func(o *Options) { o.DefaultMode, o.EnqueueMode = Buffered, Fsync })
		b.db.Append(SetStatus(id(1), Ready, 0))
		b.db.Append(InsertJob(job(1)))
		b.db.Append(SetStatus(id(1), InFlight, 0))
		close(gate)
		require.NoError(t, b.db.Barrier(b.ctx))
		require.EqualValues(t, 1, b.db.txs.Load())
		var v int
		require.NoError(t, b.db.w.conn.QueryRowContext(b.ctx, "PRAGMA synchronous").Scan(&v))
		require.Equal(t, full, v)
	})
}
