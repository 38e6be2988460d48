package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

var testBatch = store.BatchConfig{Key: "k", When: "true", Fold: "$existing + $new"}

// enqueueBatched enqueues a ready batched job, pending if open.
func (tb *testBundle) enqueueBatched(t *testing.T, open bool, plan BatchPlan) string {
	t.Helper()
	cfg := testBatch
	jobs, _, w, err := tb.e.EnqueueBatch([]NewJob{{Type: "t", Queue: "q", Priority: 32768, Payload: []byte("[1]"),
		Batch: &cfg, BatchOpen: open}}, plan)
	require.NoError(t, err)
	require.NoError(t, w.Wait(context.Background()))
	tb.e.Admit([]string{jobs[0].ID})
	tb.e.FinishBatch(plan, nil, true)
	return jobs[0].ID
}

func (tb *testBundle) pending(t *testing.T) PendingBatch {
	t.Helper()
	p, ok := tb.e.PendingBatch("k")
	require.True(t, ok, "key k has a pending job")
	return p
}

func (tb *testBundle) noPending(t *testing.T) {
	t.Helper()
	_, ok := tb.e.PendingBatch("k")
	require.False(t, ok, "key k has no pending job")
}

// opsOn returns the journalled ops about one job, in order.
func (tb *testBundle) opsOn(id string) []store.Op {
	tb.journal.mu.Lock()
	defer tb.journal.mu.Unlock()
	var out []store.Op
	for _, op := range tb.journal.ops {
		switch o := op.(type) {
		case store.InsertJobOp:
			if o.Job.ID == id {
				out = append(out, op)
			}
		case store.SetPayloadOp:
			if o.ID == id {
				out = append(out, op)
			}
		case store.CloseBatchOp:
			if o.ID == id {
				out = append(out, op)
			}
		case store.SetStatusOp:
			if o.ID == id {
				out = append(out, op)
			}
		}
	}
	return out
}

func foldInto(p PendingBatch, payload string) BatchPlan {
	return BatchPlan{
		Seen:  []SeenBatch{{Key: "k", ID: p.ID, Gen: p.Gen}},
		Folds: []BatchFold{{Key: "k", ID: p.ID, Payload: []byte(payload)}},
	}
}

func TestEngine_BatchFold(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k"}}})
	p := tb.pending(t)
	require.Equal(t, PendingBatch{ID: a, Config: testBatch}, p)
	later := tb.enqueue(t, spec{})

	plan := foldInto(p, "[1,2]")
	jobs, folded, w, err := tb.e.EnqueueBatch(nil, plan)
	require.NoError(t, err)
	require.NoError(t, w.Wait(context.Background()))
	require.Empty(t, jobs)
	require.Len(t, folded, 1)
	require.Equal(t, a, folded[0].ID)
	require.Equal(t, &testBatch, folded[0].Batch)
	require.Equal(t, store.Ready, folded[0].Status)

	// While the fold commits, the job waits out of dispatch; a later job
	// may go first, as a new enqueue does before Admit.
	tk := tb.e.NewTaker(nil, 1)
	require.Equal(t, []string{later}, drainIDs(tk))
	tb.ack(t, later)
	require.Empty(t, drainIDs(tk))
	j, _ := tb.e.Job(a)
	require.Equal(t, store.Ready, j.Status, "a held job is still ready to its readers")

	tb.e.FinishBatch(plan, nil, true)
	require.Equal(t, []string{a}, drainIDs(tk))
	require.Equal(t, []store.Op{
		store.InsertJob(store.Job{ID: a, Type: "t", Queue: "q", Priority: 32768, Status: store.Ready, Payload: []byte("[1]"),
			ReadyAt: epoch.UnixMilli(), Batch: &testBatch, BatchOpen: true}),
		store.SetPayload(a, []byte("[1,2]")),
		store.CloseBatch(a), // dispatch closes the batch, with the status
		store.SetStatus(a, store.InFlight, epoch.UnixMilli()),
	}, tb.opsOn(a))
	tb.noPending(t)
}

func TestEngine_BatchFoldKeepsThePlace(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k"}}})
	c := tb.enqueue(t, spec{})
	d := tb.enqueue(t, spec{})
	for n := range 3 {
		plan := foldInto(tb.pending(t), "[1]")
		_, _, _, err := tb.e.EnqueueBatch(nil, plan)
		require.NoError(t, err, "fold %d", n)
		tb.e.FinishBatch(plan, nil, true)
	}
	require.Equal(t, uint64(3), tb.pending(t).Gen)
	tk := tb.e.NewTaker(nil, 3)
	require.Equal(t, []string{a, c, d}, drainIDs(tk), "FIFO position kept")
}

func TestEngine_BatchPlanMoved(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(tb *testBundle, t *testing.T, id string){
		"Folded": func(tb *testBundle, t *testing.T, id string) {
			plan := foldInto(tb.pending(t), "[2]")
			_, _, _, err := tb.e.EnqueueBatch(nil, plan)
			require.NoError(t, err)
			tb.e.FinishBatch(plan, nil, true)
		},
		"FoldCommitting": func(tb *testBundle, t *testing.T, id string) {
			_, _, _, err := tb.e.EnqueueBatch(nil, foldInto(tb.pending(t), "[2]"))
			require.NoError(t, err)
		},
		"Dispatched": func(tb *testBundle, t *testing.T, id string) {
			require.Equal(t, []string{id}, drainIDs(tb.e.NewTaker(nil, 1)))
		},
		"Deleted": func(tb *testBundle, t *testing.T, id string) { tb.e.Delete([]string{id}) },
		"Sealed": func(tb *testBundle, t *testing.T, id string) {
			tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k", ID: id}}, Seals: []string{"k"}})
		},
		"Scheduled": func(tb *testBundle, t *testing.T, id string) {
			_, _, err := tb.e.Patch(id, func(now int64, j *store.Job) error { j.ReadyAt = now + 1000; return nil })
			require.NoError(t, err)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t)
			a := tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k"}}})
			seen := tb.pending(t)
			change(tb, t, a)
			_, _, _, err := tb.e.EnqueueBatch(nil, foldInto(seen, "[9]"))
			require.ErrorIs(t, err, ErrBatchMoved)
		})
	}

	t.Run("KeyGained", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k"}}})
		cfg := testBatch
		_, _, _, err := tb.e.EnqueueBatch([]NewJob{{Type: "t", Queue: "q", Batch: &cfg, BatchOpen: true}}, BatchPlan{Seen: []SeenBatch{{Key: "k"}}})
		require.ErrorIs(t, err, ErrBatchMoved, "decided when k had no pending job")
		_, _, err = tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Batch: &cfg, BatchOpen: true}})
		require.ErrorIs(t, err, ErrBatchMoved, "a second pending job for k")
		_, _, err = tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Batch: &cfg}})
		require.NoError(t, err, "a closed batched job is fine")
	})

	t.Run("TwoOpensInOneEnqueue", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		cfg := testBatch
		_, _, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Batch: &cfg, BatchOpen: true}, {Type: "t", Queue: "q", Batch: &cfg, BatchOpen: true}})
		var ee *Error
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 1, ee.Item)
	})
}

func TestEngine_BatchSeal(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k"}}})
	b := tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k", ID: a}}, Seals: []string{"k"}})
	require.Equal(t, b, tb.pending(t).ID)
	require.Equal(t, []store.Op{store.InsertJob(store.Job{ID: a, Type: "t", Queue: "q", Priority: 32768, Status: store.Ready,
		Payload: []byte("[1]"), ReadyAt: epoch.UnixMilli(), Batch: &testBatch, BatchOpen: true}), store.CloseBatch(a)}, tb.opsOn(a))
	j, _ := tb.e.Job(a)
	require.Equal(t, &testBatch, j.Batch, "a sealed job keeps its batch")

	// Scheduled batched jobs never take folds.
	at := epoch.UnixMilli() + 10_000
	cfg := testBatch
	jobs, _, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", ReadyAt: &at, Batch: &cfg}})
	require.NoError(t, err)
	tb.e.Admit([]string{jobs[0].ID})
	require.Equal(t, b, tb.pending(t).ID)
	require.False(t, tb.opsOn(jobs[0].ID)[0].(store.InsertJobOp).Job.BatchOpen)
}

func TestEngine_BatchPatchWhileFolding(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k"}}})
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{a}, drainIDs(tk))
	tk.Close()
	tb.noPending(t)

	b := tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k"}}})
	plan := foldInto(tb.pending(t), "[3]")
	_, _, _, err := tb.e.EnqueueBatch(nil, plan)
	require.NoError(t, err)
	// A patch (moving it, changing its priority) does not put it back into
	// dispatch before its fold commits.
	_, _, err = tb.e.Patch(b, func(_ int64, j *store.Job) error { j.Priority = 1; return nil })
	require.NoError(t, err)
	tk = tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{a}, drainIDs(tk), "a, requeued, but not b")
	tb.e.FinishBatch(plan, nil, true)
	require.Equal(t, []string{b}, drainIDs(tk))

	// A patch to a later ready_at while folding: released, it is
	// scheduled and its batch closes.
	tk.Close()
	c := tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k"}}})
	plan = foldInto(tb.pending(t), "[4]")
	_, _, _, err = tb.e.EnqueueBatch(nil, plan)
	require.NoError(t, err)
	_, _, err = tb.e.Patch(c, func(now int64, j *store.Job) error { j.ReadyAt = now + 1000; return nil })
	require.NoError(t, err)
	tb.e.FinishBatch(plan, nil, true)
	j, _ := tb.e.Job(c)
	require.Equal(t, store.Scheduled, j.Status)
	tb.noPending(t)
	require.Equal(t, store.CloseBatch(c), tb.opsOn(c)[len(tb.opsOn(c))-1])
}

func TestEngine_BatchFailedCommit(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueueBatched(t, true, BatchPlan{Seen: []SeenBatch{{Key: "k"}}})
	seen := tb.pending(t)
	// One enqueue folds into a, a second item seals it and opens b; the
	// commit fails.
	cfg := testBatch
	plan := BatchPlan{Seen: []SeenBatch{{Key: "k", ID: a}}, Folds: []BatchFold{{Key: "k", ID: a, Payload: []byte("[1,2]")}}, Seals: []string{"k"}}
	jobs, _, _, err := tb.e.EnqueueBatch([]NewJob{{Type: "t", Queue: "q", Payload: []byte("[3]"), Batch: &cfg, BatchOpen: true}}, plan)
	require.NoError(t, err)
	b := jobs[0].ID
	require.Equal(t, b, tb.pending(t).ID)

	tb.e.FinishBatch(plan, []string{b}, false)
	tb.e.Delete([]string{b})
	got := tb.pending(t)
	require.Equal(t, a, got.ID, "a is pending again: its seal did not commit")
	require.NotEqual(t, seen.Gen, got.Gen, "and a plan made before the failure is stale")
	require.Equal(t, []string{a}, drainIDs(tb.e.NewTaker(nil, 0)), "a is back in dispatch")
}

func TestEngine_BatchRestore(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	id := func(n int) string {
		jobs, _, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q"}})
		require.NoError(t, err)
		return jobs[0].ID
	}
	ids := []string{id(0), id(1), id(2), id(3)}
	other := store.BatchConfig{Key: "o", When: "false", Fold: "$new"}

	fresh := setup(t)
	r := fresh.e.Restore()
	for i, jid := range ids {
		st := store.Ready
		if i == 3 {
			st = store.Scheduled
		}
		require.NoError(t, r.Job(store.LiveJob{ID: jid, Queue: "q", Type: "t", Status: st, ReadyAt: epoch.UnixMilli() + int64(i)*1000*int64(i/3)}))
	}
	r.Batch(store.LiveBatch{ID: ids[0], Batch: testBatch, Open: true})
	r.Batch(store.LiveBatch{ID: ids[1], Batch: testBatch, Open: true}) // newer: wins
	r.Batch(store.LiveBatch{ID: ids[2], Batch: other})
	r.Batch(store.LiveBatch{ID: ids[3], Batch: other, Open: true}) // scheduled: takes no folds
	r.Batch(store.LiveBatch{ID: "0zzzzzzzzzzzzzzzzzzzzzzzz", Batch: other, Open: true})
	r.Finish()

	require.Equal(t, ids[1], fresh.pending(t).ID)
	_, ok := fresh.e.PendingBatch("o")
	require.False(t, ok)
	j, _ := fresh.e.Job(ids[2])
	require.Equal(t, &other, j.Batch)
	j, _ = fresh.e.Job(ids[0])
	require.Equal(t, &testBatch, j.Batch)
	require.Len(t, fresh.e.batches.confs, 2, "batches are interned")
	fresh.e.Delete(ids)
	require.Empty(t, fresh.e.batches.of)
	require.Empty(t, fresh.e.batches.confs)
	require.Empty(t, fresh.e.batches.pending)
}
