package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// keyed returns job(n) with a unique key and scope.
func keyed(n int, key string, w store.UniqueWhile) store.Job {
	return with(n, func(j *store.Job) { j.UniqueKey, j.UniqueWhile = key, w })
}

// holders returns each key's holder as Load reports it, failing if a key
// has two.
func holders(t testing.TB, b *bundle) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, u := range load(t, b).Unique {
		if u.Holds {
			require.NotContains(t, out, u.Key, "key %q has two holders", u.Key)
			out[u.Key] = u.ID
		}
	}
	return out
}

// testUnique checks unique keys: how they read back, which job holds each
// key after every op that changes it, and what Load reports.
func testUnique(t *testing.T, newB func(testing.TB) *bundle) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		for _, w := range []store.UniqueWhile{store.UniqueQueued, store.UniqueActive, store.UniqueExists} {
			t.Run(w.String(), func(t *testing.T) {
				t.Parallel()
				b := newB(t)
				in := keyed(1, "user:42 é,;\x00\"", w)
				b.apply(t, store.InsertJob(in))
				require.Equal(t, in, b.get(t, id(1)))
				listed, _, err := b.s.ListJobs(b.ctx, store.Filter{}, "", store.Asc, 1)
				require.NoError(t, err)
				require.Equal(t, []store.Job{in}, listed)
				got, err := b.s.GetJobs(b.ctx, []string{id(1)})
				require.NoError(t, err)
				require.Equal(t, []store.Job{in}, got)
				require.Equal(t, []store.UniqueJob{{ID: id(1), Key: in.UniqueKey, While: w, Status: store.Ready, Holds: true}},
					load(t, b).Unique)
			})
		}
	})

	t.Run("NoKeyNoScope", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(with(1, func(j *store.Job) { j.UniqueWhile = store.UniqueExists })))
		require.Equal(t, job(1), b.get(t, id(1)), "a scope without a key reads back as none")
		require.Empty(t, load(t, b).Unique)
	})

	t.Run("InsertTakesTheKey", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(keyed(1, "k", store.UniqueActive)), store.InsertJob(keyed(2, "other", store.UniqueQueued)))
		b.apply(t, store.InsertJob(keyed(3, "k", store.UniqueQueued)))
		require.Equal(t, map[string]string{"k": id(3), "other": id(2)}, holders(t, b))
		require.Equal(t, []store.UniqueJob{
			{ID: id(1), Key: "k", While: store.UniqueActive, Status: store.Ready},
			{ID: id(2), Key: "other", While: store.UniqueQueued, Status: store.Ready, Holds: true},
			{ID: id(3), Key: "k", While: store.UniqueQueued, Status: store.Ready, Holds: true},
		}, load(t, b).Unique, "a live job that lost its key is still loaded")
	})

	t.Run("ReleaseAndHold", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(keyed(1, "k", store.UniqueQueued)))
		b.apply(t, store.ReleaseUniqueKey(id(1)))
		require.Empty(t, holders(t, b))
		b.apply(t, store.HoldUniqueKey(id(1)))
		require.Equal(t, map[string]string{"k": id(1)}, holders(t, b))
		b.apply(t, store.HoldUniqueKey(id(1)))
		require.Equal(t, map[string]string{"k": id(1)}, holders(t, b), "holding twice changes nothing")

		// Holding takes the key from its holder.
		b.apply(t, store.InsertJob(keyed(2, "k", store.UniqueQueued)))
		b.apply(t, store.HoldUniqueKey(id(1)))
		require.Equal(t, map[string]string{"k": id(1)}, holders(t, b))

		// Missing jobs and jobs without a key: no-ops.
		b.apply(t, store.InsertJob(job(3)), store.HoldUniqueKey(id(3)), store.HoldUniqueKey(id(9)),
			store.ReleaseUniqueKey(id(9)), store.ReleaseUniqueKey(id(3)))
		require.Equal(t, map[string]string{"k": id(1)}, holders(t, b))
		require.Equal(t, job(3), b.get(t, id(3)))
	})

	t.Run("FinishedHolders", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(keyed(1, "exists", store.UniqueExists)), store.InsertJob(keyed(2, "active", store.UniqueActive)))
		b.apply(t, store.Finish(id(1), store.Completed, 0, 0, 10, 20),
			store.Finish(id(2), store.Dead, 1, 5, 0, 20), store.ReleaseUniqueKey(id(2)))
		require.Equal(t, []store.UniqueJob{{ID: id(1), Key: "exists", While: store.UniqueExists, Status: store.Completed, Holds: true}},
			load(t, b).Unique, "a finished job is loaded while it holds its key")
		b.apply(t, store.DeleteJob(id(1)))
		require.Empty(t, load(t, b).Unique)
		b.apply(t, store.InsertJob(keyed(3, "exists", store.UniqueQueued)))
		require.Equal(t, map[string]string{"exists": id(3)}, holders(t, b))
	})

	t.Run("DeleteFreesTheKey", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(keyed(1, "k", store.UniqueQueued)))
		b.apply(t, store.DeleteJob(id(1)))
		require.Empty(t, holders(t, b))
		b.apply(t, store.InsertJob(keyed(2, "k", store.UniqueQueued)))
		require.Equal(t, map[string]string{"k": id(2)}, holders(t, b))
		b.apply(t, store.DeleteEverything())
		require.Empty(t, load(t, b).Unique)
	})

	t.Run("InOneGroup", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		// The second insert takes the key and its delete does not give it
		// back; the third job returns to the queue and holds it again.
		b.apply(t, store.InsertJob(keyed(1, "k", store.UniqueQueued)), store.SetStatus(id(1), store.InFlight, 5),
			store.InsertJob(keyed(2, "k", store.UniqueQueued)), store.DeleteJob(id(2)),
			store.InsertJob(keyed(3, "j", store.UniqueQueued)), store.ReleaseUniqueKey(id(3)),
			store.HoldUniqueKey(id(3)), store.Finish(id(3), store.Completed, 0, 0, 1, 2))
		require.Equal(t, map[string]string{"j": id(3)}, holders(t, b))
		require.Equal(t, store.InFlight, b.get(t, id(1)).Status)
		require.Equal(t, []string{id(1), id(3)}, b.ids(t))
	})

	t.Run("InGroupsAppendedTogether", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		// Groups a backend may commit in one transaction: the same as one
		// at a time.
		var waits []store.Pending
		for n := range 20 {
			key := []string{"a", "b"}[n%2]
			waits = append(waits, b.s.Append(store.InsertJob(keyed(n, key, store.UniqueQueued))))
			if n%3 == 0 {
				waits = append(waits, b.s.Append(store.DeleteJob(id(n))))
			}
		}
		for _, w := range waits {
			require.NoError(t, w.Wait(b.ctx))
		}
		require.Equal(t, map[string]string{"b": id(19)}, holders(t, b), "a's last holder, 18, is deleted")
	})

	t.Run("RecoverInFlightKeepsHolders", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(keyed(1, "k", store.UniqueQueued)), store.SetStatus(id(1), store.InFlight, 5))
		n, err := b.s.RecoverInFlight(b.ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.Equal(t, []store.UniqueJob{{ID: id(1), Key: "k", While: store.UniqueQueued, Status: store.Ready, Holds: true}},
			load(t, b).Unique)
	})

	t.Run("LoadOrder", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(keyed(1, "k", store.UniqueExists)), store.InsertJob(job(2)),
			store.InsertJob(with(3, func(j *store.Job) { j.Status, j.PurgeAt = store.Dead, 9 })))
		require.Equal(t, []string{"start", "jobs", "unique", "purges"}, load(t, b).Order)
	})
}
