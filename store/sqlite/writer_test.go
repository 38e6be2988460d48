package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// gated makes the writer wait for the returned function before its first
// batch, so that everything appended until then lands in known batches.
func gated(gate chan struct{}) func(*Options) {
	return func(o *Options) { o.startGate = gate }
}

func TestBarrier(t *testing.T) {
	t.Parallel()

	t.Run("ContextEnds", func(t *testing.T) {
		t.Parallel()
		gate := make(chan struct{})
		b := setup(t, gated(gate))
		p := b.db.Append(store.InsertJob(job(1)))
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

	good1 := b.db.Append(store.InsertJob(job(1)))
	// Fails on its last op: the duplicate of job 1. Nothing of it may stay.
	bad := b.db.Append(store.InsertJob(job(2)), store.PutBudget(store.Budget{Key: "k", Allocation: 1}), store.AddError(store.ErrorRecord{JobID: id(2), Attempt: 1}), store.InsertJob(job(1)))
	good2 := b.db.Append(store.InsertJob(job(3)), store.SetStatus(id(1), store.InFlight, 7))
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
	require.Equal(t, store.InFlight, j1.Status)
	// One batch transaction, then one per group.
	require.EqualValues(t, 4, b.db.txs.Load())
}

func TestAppend_BatchSizeBoundsTransactions(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	b := setup(t, gated(gate), func(o *Options) { o.BatchSize = 3 })

	var ps []store.Pending
	n := 0
	add := func(size int) {
		ops := make([]store.Op, size)
		for i := range ops {
			ops[i] = store.InsertJob(job(n))
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

	t.Run("AcrossGroupsOfABatch", func(t *testing.T) {
		t.Parallel()
		gate := make(chan struct{})
		b := setup(t, gated(gate))
		ps := []store.Pending{
			b.db.Append(store.InsertJob(job(1))),
			b.db.Append(store.SetStatus(id(1), store.InFlight, 5)),
			b.db.Append(store.InsertJob(job(2))),
			b.db.Append(store.DeleteJob(id(1))),
			b.db.Append(store.SetStatus(id(2), store.InFlight, 9)),
		}
		close(gate)
		for _, p := range ps {
			require.NoError(t, p.Wait(b.ctx))
		}
		require.EqualValues(t, 1, b.db.txs.Load())
		require.Equal(t, []string{id(2)}, b.ids(t))
		got, err := b.db.GetJob(b.ctx, id(2), 0)
		require.NoError(t, err)
		require.Equal(t, store.InFlight, got.Status)
		require.EqualValues(t, 9, got.DequeuedAt)
	})

	t.Run("DuplicateInsertStillFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.apply(t, store.InsertJob(job(1)))
		err := b.db.Append(store.InsertJob(job(1)), store.DeleteJob(id(1))).Wait(b.ctx)
		require.EqualError(t, err, "insert job "+id(1)+": job already exists")
		require.Equal(t, []string{id(1)}, b.ids(t))
	})

	t.Run("FoldDoesNotLeakIntoRetry", func(t *testing.T) {
		t.Parallel()
		gate := make(chan struct{})
		b := setup(t, gated(gate))
		b.db.Append(store.InsertJob(job(9)))
		insert := b.db.Append(store.InsertJob(job(1)))
		// Folded into job 1's insert in the batch, but this group fails,
		// so on the retry job 1 must be inserted as it was appended.
		bad := b.db.Append(store.SetStatus(id(1), store.InFlight, 5), store.InsertJob(job(9)))
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
	groups := func(gs ...[]store.Op) []*group {
		ps := make([]*group, len(gs))
		for i, ops := range gs {
			ps[i] = &group{Ops: make([]op, len(ops))}
			for k, o := range ops {
				var err error
				ps[i].Ops[k], err = toOp(o)
				require.NoError(t, err)
			}
		}
		return ps
	}
	kinds := func(ops []op) []opKind {
		ks := make([]opKind, len(ops))
		for i, op := range ops {
			ks[i] = op.kind
		}
		return ks
	}

	for name, tc := range map[string]struct {
		groups []*group
		want   []opKind
	}{
		"InsertDelete": {
			groups: groups([]store.Op{store.InsertJob(job(1))}, []store.Op{store.AddError(store.ErrorRecord{JobID: id(1)}), store.PutJob(job(1))}, []store.Op{store.DeleteJob(id(1))}),
			want:   []opKind{opProbeNew, opNone, opNone},
		},
		"PartialUpdatesBetweenInsertAndDelete": {
			groups: groups([]store.Op{store.InsertJob(job(1)), store.PutJob(job(1))},
				[]store.Op{store.Retry(id(1), 1, 2, 3, store.Ready), store.Finish(id(1), store.Dead, 1, 2, 3, 4)},
				[]store.Op{store.PatchJob(store.JobPatch{ID: id(1)}), store.SetBudgets(id(1), nil), store.DeleteJob(id(1))}),
			want: []opKind{opProbeNew, opNone},
		},
		"PartialUpdatesFoldIntoInsert": {
			groups: groups([]store.Op{store.InsertJob(job(1)), store.Retry(id(1), 1, 2, 3, store.Ready)},
				[]store.Op{store.PatchJob(store.JobPatch{ID: id(1)}), store.AddError(store.ErrorRecord{JobID: id(1)}), store.SetBudgets(id(1), nil)},
				[]store.Op{store.Finish(id(1), store.Dead, 1, 2, 3, 4)}),
			want: []opKind{opInsertJob, opAddError},
		},
		"PartialUpdatesWithoutInsert": {
			groups: groups([]store.Op{store.Retry(id(1), 1, 2, 3, store.Ready), store.Finish(id(1), store.Dead, 1, 2, 3, 4)}),
			want:   []opKind{opRetry, opFinish},
		},
		"DeleteWithoutInsert": {
			groups: groups([]store.Op{store.PutJob(job(1)), store.SetStatus(id(1), store.Ready, 0), store.DeleteJob(id(1)), store.SetStatus(id(1), store.Ready, 0)}),
			want:   []opKind{opPutJob, opDeleteJob, opSetStatus},
		},
		"DuplicateInsertNotCoalesced": {
			groups: groups([]store.Op{store.InsertJob(job(1)), store.InsertJob(job(1)), store.DeleteJob(id(1))}),
			want:   []opKind{opInsertJob, opInsertJob, opDeleteJob},
		},
		"NotAcrossDeleteEverything": {
			groups: groups([]store.Op{store.InsertJob(job(1)), store.DeleteEverything(), store.SetStatus(id(1), store.Ready, 0), store.DeleteJob(id(1))}),
			want:   []opKind{opInsertJob, opDeleteEverything, opNone, opDeleteJob},
		},
		"UpdatesBeforeDeleteDropped": {
			groups: groups([]store.Op{store.SetStatus(id(1), store.InFlight, 5), store.SetStatus(id(2), store.InFlight, 5)},
				[]store.Op{store.AddError(store.ErrorRecord{JobID: id(1)}), store.SetPayload(id(1), nil), store.DeleteJob(id(1))}),
			want: []opKind{opNone, opSetStatus, opNone, opNone, opDeleteJob},
		},
		"UpdateAfterDeleteKept": {
			groups: groups([]store.Op{store.DeleteJob(id(1)), store.SetStatus(id(1), store.InFlight, 5)}),
			want:   []opKind{opDeleteJob, opSetStatus},
		},
		"UpdateNotDroppedAcrossRecover": {
			groups: append(groups([]store.Op{store.SetStatus(id(1), store.InFlight, 0)}),
				&group{Ops: []op{recoverInFlight(new(int64))}},
				groups([]store.Op{store.DeleteJob(id(1))})[0]),
			want: []opKind{opSetStatus, opRecoverInFlight, opDeleteJob},
		},
		"NotAcrossRecover": {
			groups: append(groups([]store.Op{store.InsertJob(job(1))}),
				&group{Ops: []op{recoverInFlight(new(int64))}},
				groups([]store.Op{store.SetStatus(id(1), store.InFlight, 0)})[0]),
			want: []opKind{opInsertJob, opRecoverInFlight, opSetStatus},
		},
		"BatchOpsFoldIntoInsert": {
			groups: groups([]store.Op{store.InsertJob(job(1))}, []store.Op{store.SetPayload(id(1), []byte("1")), store.CloseBatch(id(1))}),
			want:   []opKind{opInsertJob},
		},
		"SetPayloadNotIntoPutJob": {
			groups: groups([]store.Op{store.PutJob(job(1)), store.SetPayload(id(1), []byte("1")), store.CloseBatch(id(1))}),
			want:   []opKind{opPutJob, opSetPayload},
		},
		"BatchOpsBetweenInsertAndDelete": {
			groups: groups([]store.Op{store.InsertJob(job(1)), store.PutJob(job(1)), store.SetPayload(id(1), []byte("1"))}, []store.Op{store.DeleteJob(id(1))}),
			want:   []opKind{opProbeNew, opNone, opNone},
		},
		"OtherIDsUntouched": {
			groups: groups([]store.Op{store.InsertJob(job(1)), store.InsertJob(job(2)), store.DeleteJob(id(2)), store.SetStatus(id(3), store.Ready, 0)}),
			want:   []opKind{opInsertJob, opProbeNew, opSetStatus},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, kinds(coalesce(tc.groups)))
		})
	}

	t.Run("FoldsIntoACopy", func(t *testing.T) {
		t.Parallel()
		gs := groups([]store.Op{store.InsertJob(job(1))}, []store.Op{store.SetStatus(id(1), store.InFlight, 5), store.SetStatus(id(1), store.Ready, 0)})
		out := coalesce(gs)
		require.Equal(t, []opKind{opInsertJob}, kinds(out))
		want := job(1)
		want.Status, want.DequeuedAt = store.Ready, 5
		require.Equal(t, want, out[0].src.(store.InsertJobOp).Job)
		require.Equal(t, job(1), gs[0].Ops[0].src.(store.InsertJobOp).Job)

		open := job(1)
		open.BatchOpen = true
		gs = groups([]store.Op{store.InsertJob(open)},
			[]store.Op{store.SetPayload(id(1), []byte("[1,2]")), store.CloseBatch(id(1))})
		out = coalesce(gs)
		want = job(1)
		want.Payload = []byte("[1,2]")
		require.Equal(t, want, out[0].src.(store.InsertJobOp).Job, "a fold and a seal written with the insert")
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
		var ps []store.Pending
		for i := range 300 {
			ps = append(ps, db.Append(store.InsertJob(job(i))))
		}
		require.NoError(t, db.Close())
		for _, p := range ps {
			require.NoError(t, p.Wait(ctx))
		}
		require.NoError(t, db.Close()) // idempotent

		db, err = Open(ctx, dir, quiet())
		require.NoError(t, err)
		defer db.Close()
		n, err := db.CountJobs(ctx, store.Filter{})
		require.NoError(t, err)
		require.EqualValues(t, 300, n)
	})

	t.Run("RemovesWAL", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		db, err := Open(context.Background(), dir, quiet())
		require.NoError(t, err)
		require.NoError(t, db.Append(store.InsertJob(job(1))).Wait(context.Background()))
		require.NoError(t, db.Close())
		require.NoFileExists(t, filepath.Join(dir, FileName+"-wal"))
	})
}

func TestCommitModes(t *testing.T) {
	t.Parallel()
	const normal, full = 1, 2
	for name, tc := range map[string]struct {
		defaultMode, enqueueMode store.CommitMode
		wantInsert, wantOther    int
	}{
		"Buffered":         {store.Buffered, store.Buffered, normal, normal},
		"Fsync":            {store.Fsync, store.Fsync, full, full},
		"FsyncEnqueue":     {store.Buffered, store.Fsync, full, normal},
		"FsyncDefaultOnly": {store.Fsync, store.Buffered, normal, full},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(o *Options) { o.DefaultMode, o.EnqueueMode = tc.defaultMode, tc.enqueueMode })
			synchronous := func() int {
				var v int
				require.NoError(t, b.db.w.conn.QueryRowContext(b.ctx, "PRAGMA synchronous").Scan(&v))
				return v
			}
			require.Equal(t, map[store.CommitMode]int{store.Buffered: normal, store.Fsync: full}[tc.defaultMode], synchronous())

			// A group with an insert takes the enqueue mode, whatever else
			// it holds.
			b.apply(t, store.PutBudget(store.Budget{Key: "k"}), store.InsertJob(job(1)))
			require.Equal(t, tc.wantInsert, synchronous())
			b.apply(t, store.SetStatus(id(1), store.InFlight, 1))
			require.Equal(t, tc.wantOther, synchronous())
			b.apply(t, store.DeleteJob(id(1)))
			require.Equal(t, tc.wantOther, synchronous())
		})
	}

	t.Run("StrongestModeOfTheBatch", func(t *testing.T) {
		t.Parallel()
		gate := make(chan struct{})
		// The held mark must not be flushed in a transaction of its own
		// before the count is read: a Barrier enqueued after the gate
		// opens may or may not join the batch, and a mark's delay may run
		// out on a loaded machine. So the mark is held for an hour and the
		// test waits for the last group itself.
		b := setup(t, gated(gate), func(o *Options) {
			o.DefaultMode, o.EnqueueMode = store.Buffered, store.Fsync
			o.MarkDelay = time.Hour
		})
		b.db.Append(store.SetStatus(id(1), store.Ready, 0))
		b.db.Append(store.InsertJob(job(1)))
		last := b.db.Append(store.SetStatus(id(1), store.InFlight, 0))
		close(gate)
		require.NoError(t, last.Wait(b.ctx))
		require.EqualValues(t, 1, b.db.txs.Load())
		var v int
		require.NoError(t, b.db.w.conn.QueryRowContext(b.ctx, "PRAGMA synchronous").Scan(&v))
		require.Equal(t, full, v)
	})
}

func TestQueueDepth(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	b := setup(t, gated(gate))
	b.db.Append(store.InsertJob(job(1)))
	b.db.Append(store.InsertJob(job(2)), store.InsertJob(job(3)))
	last := b.db.Append(store.DeleteJob(id(1)))
	require.Equal(t, 3, b.db.QueueDepth(), "groups, not ops, while the writer is held")
	close(gate)
	require.NoError(t, last.Wait(b.ctx))
	require.Zero(t, b.db.QueueDepth())
}
