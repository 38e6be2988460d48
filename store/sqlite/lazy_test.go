package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zizq/zizq/store"
)

func TestDispatchMark(t *testing.T) {
	t.Parallel()
	status := func(t *testing.T, b *testBundle, n int) (store.Status, int64) {
		t.Helper()
		j, err := b.db.GetJob(b.ctx, id(n), 0) // no Barrier: what is written
		require.NoError(t, err)
		return j.Status, j.DequeuedAt
	}
	delay := func(d time.Duration) func(*Options) { return func(o *Options) { o.MarkDelay = d } }

	t.Run("HeldUntilBarrier", func(t *testing.T) {
		t.Parallel()
		b := setup(t, delay(time.Hour))
		b.apply(t, store.InsertJob(job(1)))
		b.apply(t, store.DispatchMark(id(1), 42))
		st, _ := status(t, b, 1)
		require.Equal(t, store.Ready, st, "held back")
		require.NoError(t, b.db.Barrier(b.ctx))
		st, at := status(t, b, 1)
		require.Equal(t, store.InFlight, st)
		require.EqualValues(t, 42, at)
	})

	t.Run("WrittenByABarrierOfTheSameTransaction", func(t *testing.T) {
		t.Parallel()
		// A mark appended just before a Barrier may share the barrier's
		// transaction: the flush must write it, not hold it.
		b := setup(t, delay(time.Hour))
		mark, err := toOp(store.DispatchMark(id(1), 42))
		require.NoError(t, err)
		groups := []*group{{Ops: []op{mark}}, {Ops: []op{{kind: opFlushMarks}}}}
		ops, _, held := b.db.txOps(groups, time.Now())
		require.Empty(t, held, "nothing held past a flush")
		written := false
		for _, o := range ops {
			written = written || (o.kind == opSetStatus && o.id == id(1))
		}
		require.True(t, written, "the mark is in the flush's transaction")
	})

	t.Run("WrittenAfterTheDelay", func(t *testing.T) {
		t.Parallel()
		b := setup(t, delay(20*time.Millisecond))
		b.apply(t, store.InsertJob(job(1)))
		b.apply(t, store.DispatchMark(id(1), 42))
		require.Eventually(t, func() bool {
			st, _ := status(t, b, 1)
			return st == store.InFlight
		}, 10*time.Second, 5*time.Millisecond, "the idle writer writes it when due")
	})

	t.Run("WrittenBeforeALaterOp", func(t *testing.T) {
		t.Parallel()
		b := setup(t, delay(time.Hour))
		b.apply(t, store.InsertJob(job(1)))
		b.apply(t, store.DispatchMark(id(1), 42))
		b.apply(t, store.SetStatus(id(1), store.Ready, 0)) // a requeue keeps dequeued_at
		st, at := status(t, b, 1)
		require.Equal(t, store.Ready, st)
		require.EqualValues(t, 42, at, "the mark was written first")
	})

	t.Run("WrittenAtClose", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ctx := context.Background()
		o := quiet()
		o.MarkDelay = time.Hour
		db, err := Open(ctx, dir, o)
		require.NoError(t, err)
		require.NoError(t, db.Append(store.InsertJob(job(1))).Wait(ctx))
		require.NoError(t, db.Append(store.DispatchMark(id(1), 42)).Wait(ctx))
		require.NoError(t, db.Close())
		db, err = Open(ctx, dir, o)
		require.NoError(t, err)
		defer db.Close()
		j, err := db.GetJob(ctx, id(1), 0)
		require.NoError(t, err)
		require.Equal(t, store.InFlight, j.Status)
	})

	t.Run("DroppedByTheDelete", func(t *testing.T) {
		t.Parallel()
		b := setup(t, delay(time.Hour))
		b.apply(t, store.InsertJob(job(1)), store.InsertJob(job(2)))
		b.apply(t, store.DispatchMark(id(1), 42))
		b.apply(t, store.DispatchMark(id(2), 43))
		b.apply(t, store.DeleteJob(id(1)))
		require.EqualValues(t, 1, b.db.held.count.Load(), "job 1's mark gone with it, job 2's held")
		require.NoError(t, b.db.Barrier(b.ctx))
		require.EqualValues(t, 0, b.db.held.count.Load())
		require.Equal(t, []string{id(2)}, b.ids(t))
	})
}
