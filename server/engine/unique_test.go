package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// uspec is a job with a unique key.
type uspec struct {
	queue   string // "" = q
	key     string
	while   store.UniqueWhile
	readyAt *int64
	keep    bool // retain the job once finished (an hour)
	binds   []BindingSpec
}

func (u uspec) newJob() NewJob {
	j := NewJob{Type: "t", Queue: "q", Priority: 1, Payload: []byte("{}"), ReadyAt: u.readyAt,
		UniqueKey: u.key, UniqueWhile: u.while, Budgets: u.binds}
	if u.queue != "" {
		j.Queue = u.queue
	}
	if u.keep {
		hour := uint64(time.Hour / time.Millisecond)
		j.Retention = &store.Retention{CompletedMs: &hour, DeadMs: &hour}
	}
	return j
}

// enqueueU enqueues jobs in one request and admits the new ones.
func (tb *testBundle) enqueueU(t testing.TB, specs ...uspec) []Enqueued {
	t.Helper()
	in := make([]NewJob, len(specs))
	for i, s := range specs {
		in[i] = s.newJob()
	}
	out, w, err := tb.e.Enqueue(in)
	require.NoError(t, err)
	require.NoError(t, w.Wait(context.Background()))
	var ids []string
	for _, j := range out {
		if !j.Duplicate {
			ids = append(ids, j.ID)
		}
	}
	tb.e.Admit(ids)
	return out
}

// created enqueues one job that must be new.
func (tb *testBundle) created(t testing.TB, s uspec) string {
	t.Helper()
	out := tb.enqueueU(t, s)
	require.False(t, out[0].Duplicate, "expected a new job")
	return out[0].ID
}

// dupOf requires that an enqueue of s is a duplicate of id.
func (tb *testBundle) dupOf(t testing.TB, id string, s uspec) {
	t.Helper()
	out := tb.enqueueU(t, s)
	require.True(t, out[0].Duplicate, "expected a duplicate of %s", id)
	require.Equal(t, id, out[0].ID)
}

func (tb *testBundle) holder(key string) string {
	id, _ := tb.e.UniqueHolder(key)
	return id
}

var scopes = []store.UniqueWhile{store.UniqueQueued, store.UniqueActive, store.UniqueExists}

// TestEngine_UniqueScopes walks a holder of each scope through each status and
// checks, for each incoming scope, whether an enqueue is a duplicate (D) or
// new (-), as docs/API.md §Unique jobs says: the incoming scope against the
// holder's status, while the holder holds its key under its own scope.
func TestEngine_UniqueScopes(t *testing.T) {
	t.Parallel()
	later := epoch.Add(time.Hour).UnixMilli()
	want := map[store.UniqueWhile]map[string]string{
		// incoming:            queued, active, exists
		store.UniqueQueued: {"scheduled": "DDD", "ready": "DDD", "in_flight": "---", "completed": "---", "dead": "---"},
		store.UniqueActive: {"scheduled": "DDD", "ready": "DDD", "in_flight": "-DD", "completed": "---", "dead": "---"},
		store.UniqueExists: {"scheduled": "DDD", "ready": "DDD", "in_flight": "-DD", "completed": "--D", "dead": "--D"},
	}
	for holderScope, byStatus := range want {
		for status, marks := range byStatus {
			for i, incoming := range scopes {
				t.Run(holderScope.String()+"/"+status+"/"+incoming.String(), func(t *testing.T) {
					t.Parallel()
					tb := setup(t)
					s := uspec{key: "k", while: holderScope, keep: true}
					if status == "scheduled" {
						s.readyAt = &later
					}
					h := tb.created(t, s)
					if status != "scheduled" && status != "ready" {
						tk := tb.e.NewTaker(nil, 0)
						require.Equal(t, []string{h}, drainIDs(tk))
						switch status {
						case "completed":
							tb.ack(t, h)
						case "dead":
							_, _, err := tb.e.Fail(h, Failure{Kill: true})
							require.NoError(t, err)
						}
					}
					in := uspec{key: "k", while: incoming}
					if marks[i] == 'D' {
						tb.dupOf(t, h, in)
					} else {
						require.NotEqual(t, h, tb.created(t, in))
					}
				})
			}
		}
	}
}

func TestEngine_UniqueReleaseAndReclaim(t *testing.T) {
	t.Parallel()
	q := uspec{key: "k", while: store.UniqueQueued}

	t.Run("RetryTakesAFreeKey", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		a := tb.created(t, q)
		tk := tb.e.NewTaker(nil, 0)
		require.Equal(t, []string{a}, drainIDs(tk))
		require.Empty(t, tb.holder("k"), "dispatch releases a queued key")
		j, _, err := tb.e.Fail(a, Failure{Message: "again"})
		require.NoError(t, err)
		require.Equal(t, store.Scheduled, j.Status)
		require.Equal(t, a, tb.holder("k"), "back in the queue, it holds it again")
		tb.dupOf(t, a, q)
	})

	t.Run("RetryLeavesATakenKey", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		a := tb.created(t, q)
		tk := tb.e.NewTaker([]string{"q"}, 0)
		require.Equal(t, []string{a}, drainIDs(tk))
		b := tb.created(t, uspec{queue: "other", key: "k"})
		_, _, err := tb.e.Fail(a, Failure{Message: "again"})
		require.NoError(t, err)
		require.Equal(t, b, tb.holder("k"))
		// b runs and releases the key; a, queued again meanwhile, does not
		// take it back (Zizq reclaims only on the way back to the queue).
		other := tb.e.NewTaker([]string{"other"}, 0)
		require.Equal(t, []string{b}, drainIDs(other))
		require.Empty(t, tb.holder("k"))
		require.NotEqual(t, a, tb.created(t, q))
	})

	t.Run("DisconnectTakesAFreeKey", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		a := tb.created(t, q)
		tk := tb.e.NewTaker(nil, 0)
		require.Equal(t, []string{a}, drainIDs(tk))
		require.Empty(t, tb.holder("k"))
		tk.Close()
		require.Equal(t, a, tb.holder("k"), "[decision] a requeue after a disconnect takes the key too")
		tb.dupOf(t, a, q)
	})

	t.Run("ReclaimAfterAnotherLetItGo", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		a := tb.created(t, q)
		tk := tb.e.NewTaker(nil, 0)
		require.Equal(t, []string{a}, drainIDs(tk))
		b := tb.created(t, q)
		require.Equal(t, []string{b}, drainIDs(tk))
		tb.ack(t, b)
		n := len(tb.journal.ops)
		_, _, err := tb.e.Fail(a, Failure{Message: "again"})
		require.NoError(t, err)
		require.Equal(t, a, tb.holder("k"))
		require.Contains(t, tb.journal.ops[n:], store.HoldUniqueKey(a), "the store learns the claim")
	})

	t.Run("ActiveReleasesWhenFinished", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		a := tb.created(t, uspec{key: "k", while: store.UniqueActive, keep: true})
		tk := tb.e.NewTaker(nil, 0)
		require.Equal(t, []string{a}, drainIDs(tk))
		require.Equal(t, a, tb.holder("k"))
		n := len(tb.journal.ops)
		tb.ack(t, a)
		require.Empty(t, tb.holder("k"))
		require.Contains(t, tb.journal.ops[n:], store.ReleaseUniqueKey(a), "a kept row lets its key go in the store")
	})

	t.Run("ExistsHoldsUntilPurged", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		e := uspec{key: "k", while: store.UniqueExists, keep: true}
		a := tb.created(t, e)
		tk := tb.e.NewTaker(nil, 0)
		require.Equal(t, []string{a}, drainIDs(tk))
		tb.ack(t, a)
		tb.dupOf(t, a, e)
		tb.clk.Advance(time.Hour - time.Millisecond)
		tb.dupOf(t, a, e)
		tb.clk.Advance(time.Millisecond)
		require.Empty(t, tb.holder("k"), "purged")
		tb.created(t, e)
	})

	t.Run("ExistsWithoutRetentionIsGone", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		e := uspec{key: "k", while: store.UniqueExists}
		a := tb.created(t, e)
		tk := tb.e.NewTaker(nil, 0)
		require.Equal(t, []string{a}, drainIDs(tk))
		tb.ack(t, a) // completed jobs are not kept by default
		require.Empty(t, tb.holder("k"))
	})

	t.Run("DeleteLetsGo", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		e := uspec{key: "k", while: store.UniqueExists, keep: true}
		a := tb.created(t, e)
		tb.e.Delete([]string{a})
		require.Empty(t, tb.holder("k"))
		b := tb.created(t, e)
		tk := tb.e.NewTaker(nil, 0)
		require.Equal(t, []string{b}, drainIDs(tk))
		tb.ack(t, b)
		require.Equal(t, b, tb.holder("k"), "a finished exists job holds")
		tb.e.Delete([]string{b})
		require.Empty(t, tb.holder("k"), "until deleted")
	})

	t.Run("LatestClaimantWins", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		a := tb.created(t, uspec{key: "k", while: store.UniqueExists, keep: true})
		tk := tb.e.NewTaker([]string{"q"}, 0)
		require.Equal(t, []string{a}, drainIDs(tk))
		b := tb.created(t, uspec{queue: "other", key: "k"}) // a is in flight: not in b's scope
		require.Equal(t, b, tb.holder("k"))
		tb.ack(t, a)
		require.Equal(t, b, tb.holder("k"), "a finished, but it had lost the key")
		tb.e.Delete([]string{b})
		require.Empty(t, tb.holder("k"))
	})

	t.Run("PatchKeepsTheHolder", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		later := epoch.Add(time.Hour).UnixMilli()
		a := tb.created(t, uspec{key: "k", readyAt: &later})
		_, _, err := tb.e.Patch(a, func(now int64, j *store.Job) error { j.ReadyAt, j.Queue = now, "other"; return nil })
		require.NoError(t, err)
		tb.dupOf(t, a, q)
		_, _, err = tb.e.Patch(a, func(now int64, j *store.Job) error { j.ReadyAt = later; return nil })
		require.NoError(t, err)
		tb.dupOf(t, a, q)
	})

	t.Run("ReadmitTakesAFreeKey", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		a := tb.created(t, uspec{key: "k", while: store.UniqueActive, keep: true})
		dead := tb.kill(t, a)
		require.Equal(t, "k", dead.UniqueKey)
		require.Empty(t, tb.holder("k"))
		_, _, err := tb.e.Readmit(dead)
		require.NoError(t, err)
		require.Equal(t, a, tb.holder("k"))
	})

	t.Run("ResetForgetsEverything", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.created(t, q)
		tb.e.Reset()
		require.Empty(t, tb.holder("k"))
		tb.created(t, q)
	})
}

func TestEngine_UniqueBulk(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	q := uspec{key: "k"}
	out := tb.enqueueU(t, q, uspec{key: "j"}, uspec{key: "k", while: store.UniqueExists}, uspec{})
	require.False(t, out[0].Duplicate)
	require.True(t, out[2].Duplicate, "a later item is a duplicate of an earlier one")
	require.Equal(t, out[0].ID, out[2].ID)
	require.False(t, out[3].Duplicate)

	// A duplicate binds nothing: a missing budget is not an error, and its
	// create_with creates nothing.
	cw := &store.Budget{Allocation: 1, Strategy: store.WhileInFlight}
	out = tb.enqueueU(t,
		uspec{key: "k", binds: []BindingSpec{{Key: "missing", Cost: 1}}},
		uspec{key: "j", binds: []BindingSpec{{Key: "made", Cost: 1, CreateWith: cw}}})
	require.True(t, out[0].Duplicate && out[1].Duplicate)
	require.Empty(t, tb.e.Budgets(false))

	// A failing item fails the request whole: its keys claim nothing.
	_, _, err := tb.e.Enqueue([]NewJob{uspec{key: "new"}.newJob(), uspec{key: "x", binds: []BindingSpec{{Key: "missing", Cost: 1}}}.newJob()})
	require.ErrorContains(t, err, "budget 'missing' does not exist")
	require.Empty(t, tb.holder("new"))
}

func TestEngine_UniqueRestore(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	r := tb.e.Restore()
	require.NoError(t, r.Job(store.LiveJob{ID: "03hbspbwnw9m04mdludj16jsc", Queue: "q", Type: "t", Status: store.Ready}))
	require.NoError(t, r.Job(store.LiveJob{ID: "03hbspbwnw9m04mdludj16jsd", Queue: "q", Type: "t", Status: store.Ready}))
	r.Unique(store.UniqueJob{ID: "03hbspbwnw9m04mdludj16jsc", Key: "a", While: store.UniqueActive, Status: store.Ready, Holds: true})
	r.Unique(store.UniqueJob{ID: "03hbspbwnw9m04mdludj16jsd", Key: "a", While: store.UniqueQueued, Status: store.Ready})
	r.Unique(store.UniqueJob{ID: "03hbspbx73m827tya0zdbnrrh", Key: "b", While: store.UniqueExists, Status: store.Dead, Holds: true})
	r.Unique(store.UniqueJob{ID: "03hbspbx73m827tya0zdbnrri", Key: "c", While: store.UniqueQueued, Status: store.Completed, Holds: true})
	r.Finish()
	require.Equal(t, "03hbspbwnw9m04mdludj16jsc", tb.holder("a"))
	require.Equal(t, "03hbspbx73m827tya0zdbnrrh", tb.holder("b"), "a finished exists job holds")
	require.Empty(t, tb.holder("c"), "a finished queued job cannot hold")
	j, _ := tb.e.Job("03hbspbwnw9m04mdludj16jsd")
	require.Equal(t, "a", j.UniqueKey, "a live job that does not hold its key still has it")
	require.Equal(t, store.UniqueQueued, j.UniqueWhile)
	tb.dupOf(t, "03hbspbx73m827tya0zdbnrrh", uspec{key: "b", while: store.UniqueExists})
}

// At a restart, a queued job left in flight takes its key back when no job
// holds it: not when one does, and yes when the holder's purge is already
// due.
func TestEngine_UniqueRecoveredAtRestart(t *testing.T) {
	t.Parallel()
	const (
		held, flight, purged, flight2, flight3 = "03hbspbwnw9m04mdludj16js1", "03hbspbwnw9m04mdludj16js2",
			"03hbspbwnw9m04mdludj16js3", "03hbspbwnw9m04mdludj16js4", "03hbspbwnw9m04mdludj16js5"
	)
	tb := setup(t)
	r := tb.e.Restore()
	for _, j := range []struct {
		id string
		st store.Status
	}{{held, store.Ready}, {flight, store.InFlight}, {flight2, store.InFlight}, {flight3, store.InFlight}} {
		require.NoError(t, r.Job(store.LiveJob{ID: j.id, Queue: "q", Type: "t", Status: j.st}))
	}
	r.Unique(store.UniqueJob{ID: held, Key: "a", While: store.UniqueQueued, Status: store.Ready, Holds: true})
	r.Unique(store.UniqueJob{ID: flight, Key: "a", While: store.UniqueQueued, Status: store.InFlight})
	r.Unique(store.UniqueJob{ID: purged, Key: "b", While: store.UniqueExists, Status: store.Completed, Holds: true})
	r.Unique(store.UniqueJob{ID: flight3, Key: "b", While: store.UniqueQueued, Status: store.InFlight})
	r.Unique(store.UniqueJob{ID: flight2, Key: "b", While: store.UniqueQueued, Status: store.InFlight})
	r.Purge(purged, epoch.UnixMilli()-1)
	r.Finish()
	require.Equal(t, held, tb.holder("a"), "a holder keeps its key")
	require.Equal(t, flight2, tb.holder("b"), "the first by ID of the jobs left in flight takes a free key")
	require.Equal(t, []store.Op{store.DeleteJob(purged), store.HoldUniqueKey(flight2)}, tb.journal.ops)
}
