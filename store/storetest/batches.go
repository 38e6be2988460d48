package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// testBatches checks what batched jobs keep (their batch and whether it is
// open) and the two ops of a fold: SetPayload and CloseBatch, alone, in
// one group with the insert they follow, and in groups appended without
// waiting.
func testBatches(t *testing.T, newB func(testing.TB) *bundle) {
	cfg := store.BatchConfig{Key: "push:é\"<&>", When: `($existing | length) < 3`, Fold: "$existing + $new"}
	batched := func(n int, open bool) store.Job {
		return with(n, func(j *store.Job) { j.Batch, j.BatchOpen = &cfg, open })
	}

	t.Run("InsertRoundTrip", func(t *testing.T) {
		t.Parallel()
		for name, in := range map[string]store.Job{
			"Open":        batched(1, true),
			"Closed":      batched(1, false),
			"EmptyKey":    with(1, func(j *store.Job) { j.Batch = &store.BatchConfig{When: "true", Fold: "$new"} }),
			"WithOptions": with(1, func(j *store.Job) { j.Batch, j.RetryLimit, j.DequeuedAt = &cfg, ptr(uint32(2)), 9 }),
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := newB(t)
				b.apply(t, store.InsertJob(in))
				require.Equal(t, in, b.get(t, in.ID))
				got, err := b.s.GetJobs(b.ctx, []string{in.ID})
				require.NoError(t, err)
				require.Equal(t, []store.Job{in}, got)
				listed, _, err := b.s.ListJobs(b.ctx, store.Filter{}, "", store.Asc, 10)
				require.NoError(t, err)
				require.Equal(t, []store.Job{in}, listed)
			})
		}
	})

	t.Run("SetPayload", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(batched(1, true)), store.InsertJob(job(2)))
		b.apply(t, store.SetPayload(id(1), []byte(`[1,2]`)))
		require.Equal(t, with(1, func(j *store.Job) { j.Batch, j.BatchOpen, j.Payload = &cfg, true, []byte(`[1,2]`) }), b.get(t, id(1)))
		require.Equal(t, job(2), b.get(t, id(2)), "other jobs keep theirs")

		b.apply(t, store.SetPayload(id(2), nil))
		require.Nil(t, b.get(t, id(2)).Payload, "an empty payload reads back as nil")
		b.apply(t, store.SetPayload(id(2), []byte(`"again"`)))
		require.Equal(t, `"again"`, string(b.get(t, id(2)).Payload), "a job without a payload gets one")

		b.apply(t, store.SetPayload(id(3), []byte(`1`))) // missing job: no-op
		require.Equal(t, ids(1, 2), b.ids(t))
		b.apply(t, store.InsertJob(job(3)))
		require.Equal(t, job(3), b.get(t, id(3)), "no payload was left behind for a later job")
	})

	t.Run("CloseBatch", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(batched(1, true)), store.InsertJob(batched(2, true)))
		b.apply(t, store.CloseBatch(id(1)))
		require.Equal(t, batched(1, false), b.get(t, id(1)))
		require.Equal(t, batched(2, true), b.get(t, id(2)))
		b.apply(t, store.CloseBatch(id(1)), store.CloseBatch(id(9))) // closed again, missing: no-ops
		require.Equal(t, batched(1, false), b.get(t, id(1)))
		require.Equal(t, ids(1, 2), b.ids(t))
	})

	t.Run("PutJobWritesTheBatch", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(batched(1, true)))
		b.apply(t, store.PutJob(job(1)))
		require.Equal(t, job(1), b.get(t, id(1)))
		b.apply(t, store.PutJob(batched(1, true)))
		require.Equal(t, batched(1, true), b.get(t, id(1)))
	})

	t.Run("AFoldInOneGroup", func(t *testing.T) {
		t.Parallel()
		// A fold that seals the pending job and starts another, as the
		// engine journals it, with the insert of the sealed job before it
		// in the same group (a bulk enqueue).
		b := newB(t)
		b.apply(t, store.InsertJob(batched(1, true)), store.SetPayload(id(1), []byte(`[1,2]`)),
			store.CloseBatch(id(1)), store.InsertJob(batched(2, true)), store.SetPayload(id(2), []byte(`[3,4]`)))
		require.Equal(t, with(1, func(j *store.Job) { j.Batch, j.Payload = &cfg, []byte(`[1,2]`) }), b.get(t, id(1)))
		require.Equal(t, with(2, func(j *store.Job) { j.Batch, j.BatchOpen, j.Payload = &cfg, true, []byte(`[3,4]`) }), b.get(t, id(2)))
		require.Equal(t, []store.LiveBatch{{ID: id(1), Batch: cfg}, {ID: id(2), Batch: cfg, Open: true}}, load(t, b).Batches)
	})

	t.Run("FoldsInGroupsWithoutWaiting", func(t *testing.T) {
		t.Parallel()
		// The ops of a storm of folds, each its own group: the last payload
		// wins, whatever the backend commits together.
		b := newB(t)
		var ps []store.Pending
		ps = append(ps, b.s.Append(store.InsertJob(batched(1, true))))
		payload := "[0"
		for n := 1; n <= 50; n++ {
			payload += ",1"
			ps = append(ps, b.s.Append(store.SetPayload(id(1), []byte(payload+"]"))))
			if n == 25 {
				ps = append(ps, b.s.Append(store.SetStatus(id(1), store.InFlight, 3), store.CloseBatch(id(1))))
			}
		}
		for _, p := range ps {
			require.NoError(t, p.Wait(b.ctx))
		}
		want := with(1, func(j *store.Job) {
			j.Batch, j.Payload, j.Status, j.DequeuedAt = &cfg, []byte(payload+"]"), store.InFlight, 3
		})
		require.Equal(t, want, b.get(t, id(1)))
	})

	t.Run("InsertThenDeleteLeavesNoPayload", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(batched(1, true)), store.SetPayload(id(1), []byte(`[9]`)),
			store.CloseBatch(id(1)), store.DeleteJob(id(1)))
		b.s.Append(store.InsertJob(batched(2, true)))
		b.s.Append(store.SetPayload(id(2), []byte(`[8]`)))
		require.NoError(t, b.s.Append(store.DeleteJob(id(2))).Wait(b.ctx))
		require.Empty(t, b.ids(t))
		b.apply(t, store.InsertJob(job(1)), store.InsertJob(job(2)))
		require.Equal(t, job(1), b.get(t, id(1)), "no payload of the deleted job survived")
		require.Equal(t, job(2), b.get(t, id(2)))
	})

	t.Run("LoadedWithTheLiveJobs", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(batched(3, true)), store.InsertJob(batched(1, false)),
			store.InsertJob(with(2, func(j *store.Job) { j.Batch, j.Status = &cfg, store.Scheduled })),
			store.InsertJob(with(4, func(j *store.Job) { j.Batch, j.Status, j.PurgeAt = &cfg, store.Completed, 50 })),
			store.InsertJob(job(5)), store.InsertJob(keyed(6, "k", store.UniqueQueued)))
		b.apply(t, store.CloseBatch(id(3)), store.SetStatus(id(1), store.InFlight, 7))
		got := load(t, b)
		require.Equal(t, []store.LiveBatch{{ID: id(1), Batch: cfg}, {ID: id(2), Batch: cfg}, {ID: id(3), Batch: cfg}}, got.Batches,
			"live batched jobs only, by id, as they are now")
		require.Equal(t, []string{"start", "jobs", "unique", "batches", "purges"}, got.Order)
	})

	t.Run("FailedGroupKeepsTheBatch", func(t *testing.T) {
		t.Parallel()
		// A fold's ops commit with its group or not at all.
		b := newB(t)
		b.apply(t, store.InsertJob(batched(1, true)))
		err := b.s.Append(store.CloseBatch(id(1)), store.SetPayload(id(1), []byte(`[5]`)), store.InsertJob(job(1))).Wait(b.ctx)
		require.Error(t, err, "the duplicate insert fails the group")
		require.Equal(t, batched(1, true), b.get(t, id(1)))
	})

	t.Run("DeleteEverything", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(batched(1, true)), store.SetPayload(id(1), []byte(`[5]`)))
		b.apply(t, store.DeleteEverything())
		b.apply(t, store.InsertJob(job(1)))
		require.Equal(t, job(1), b.get(t, id(1)))
		require.Empty(t, load(t, b).Batches)
	})
}
