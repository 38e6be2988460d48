package sqlite

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zizq/zizq/store"
)

// TestCommitGroups_MatchOneOpATransaction is the oracle test of group
// commit: random ops on a few jobs, each its own group, committed in one
// transaction (coalesced, runs applied by one statement each, dispatch
// marks held) must leave the store, after a Barrier, exactly as committing
// them one transaction each with no mark held does, where neither
// coalescing nor runs can apply. Each group's error must match too.
func TestCommitGroups_MatchOneOpATransaction(t *testing.T) {
	t.Parallel()
	// 1000: every op in one transaction; 3 and 7: marks held across
	// transactions, written by a later op on their job or dropped by its
	// delete.
	for _, batch := range []int{1000, 7, 3} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			t.Parallel()
			testCommitGroups(t, batch)
		})
	}
}

func testCommitGroups(t *testing.T, batch int) {
	seeds := uint64(60)
	if testing.Short() { // the race run: two seeds with duplicates still
		seeds = 12
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 7))
		// One seed in ten inserts jobs that exist: the batch fails and
		// each group is retried alone.
		ops := randomGroups(rng, 80, 8, seed%10 == 0)

		// The jobs and an error record each exist before: an op on a row
		// written in the same transaction is folded into that write,
		// never part of a run.
		var before []store.Op
		for k := 1; k <= 8; k++ {
			before = append(before, store.InsertJob(job(k)),
				store.AddError(store.ErrorRecord{JobID: id(k), Attempt: 9, Message: "before"}))
		}

		oracle := setup(t, func(o *Options) { o.plainWrites = true })
		oracle.apply(t, before...)
		want := make([]string, len(ops))
		for i, o := range ops {
			want[i] = errText(oracle.db.Append(o...).Wait(oracle.ctx))
		}

		gate := make(chan struct{})
		grouped := reopenGated(t, before, gate, batch)
		ps := make([]store.Pending, len(ops))
		for i, o := range ops {
			ps[i] = grouped.db.Append(o...)
		}
		close(gate)
		got := make([]string, len(ops))
		for i, p := range ps {
			got[i] = errText(p.Wait(grouped.ctx))
		}
		require.Equal(t, want, got, "seed %d: each group's outcome", seed)
		if seed%10 != 0 && batch >= len(ops) {
			require.EqualValues(t, 1, grouped.db.txs.Load(), "seed %d: one transaction", seed)
		}
		require.NoError(t, grouped.db.Barrier(grouped.ctx), "held dispatch marks written")
		require.Equal(t, contents(t, oracle), contents(t, grouped), "seed %d: the stored rows", seed)
	}
}

// reopenGated returns a store holding before, committed, whose writer
// starts when gate is closed and commits up to batch ops a transaction.
func reopenGated(t *testing.T, before []store.Op, gate chan struct{}, batch int) *testBundle {
	b := setup(t)
	b.apply(t, before...)
	require.NoError(t, b.db.Close())
	o := quiet()
	o.startGate, o.BatchSize = gate, batch
	// Held marks are written by the Barrier, never by their delay running
	// out (on a loaded machine) in a transaction of their own before the
	// transactions are counted.
	o.MarkDelay = time.Hour
	db, err := Open(b.ctx, b.dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return &testBundle{db: db, dir: b.dir, ctx: b.ctx}
}

// unlike changes one of the columns a bulk's jobs usually share (the
// multi-row INSERT that binds them once, runs.go).
func unlike(rng *rand.Rand, j *store.Job) {
	switch rng.IntN(7) {
	case 0:
		j.Queue = "other"
	case 1:
		j.Type = "other"
	case 2:
		j.Priority = 7
	case 3:
		j.ReadyAt++
	case 4:
		j.Attempts = 2
	case 5:
		j.Budgets = []store.Binding{{Key: "b", Cost: 3}}
	default:
		j.FairTag = 5
	}
}

// randomGroups returns n groups, most of one op on jobs 1..ids, biased to
// long runs of marks and deletes as take streams and batched acks append
// them, some a bulk enqueue of new jobs. Unless dupes, a job is inserted
// only when it does not exist, so that no op fails.
func randomGroups(rng *rand.Rand, n, ids int, dupes bool) [][]store.Op {
	var ops []store.Op
	var groups [][]store.Op
	flush := func() {
		for _, o := range ops {
			groups = append(groups, []store.Op{o})
		}
		ops = ops[:0]
	}
	next := 100 // bulk jobs' numbers
	exists := map[string]bool{}
	for k := 1; k <= ids; k++ {
		exists[id(k)] = true
	}
	for len(groups)+len(ops) < n {
		k := 1 + rng.IntN(ids)
		j := job(k)
		j.Payload = []byte{byte(rng.IntN(3))}
		switch rng.IntN(12) {
		case 11: // a bulk enqueue, in multi-row statements and one by one
			flush()
			var bulk []store.Op
			at := job(next + 1).ReadyAt // a bulk's jobs are ready at one moment
			for range insertChunk + rng.IntN(2*insertChunk) {
				next++
				b := job(next)
				b.ReadyAt = at
				if rng.IntN(3) == 0 {
					b.Payload = nil
				}
				bulk = append(bulk, store.InsertJob(b))
			}
			if rng.IntN(2) == 0 { // its chunk binds every row's own values
				k := rng.IntN(len(bulk))
				b := bulk[k].(store.InsertJobOp).Job
				unlike(rng, &b)
				bulk[k] = store.InsertJob(b)
			}
			if dupes && rng.IntN(2) == 0 {
				bulk[rng.IntN(len(bulk))] = store.InsertJob(j)
			}
			groups = append(groups, bulk)
		case 0, 1, 9:
			if exists[j.ID] && !dupes {
				continue
			}
			exists[j.ID] = true
			ops = append(ops, store.InsertJob(j))
		case 2:
			ops = append(ops, store.PutJob(j))
		case 3:
			ops = append(ops, store.SetPayload(j.ID, j.Payload))
		case 4:
			ops = append(ops, store.AddError(store.ErrorRecord{JobID: j.ID, Attempt: uint32(rng.IntN(2)), Message: "x"}))
		case 5:
			ops = append(ops, store.Retry(j.ID, 2, 3, 4, store.Ready))
		case 6, 7, 10: // a run of marks, all alike or not
			alike, ms := rng.IntN(2) == 0, int64(rng.IntN(3))
			for range 1 + rng.IntN(6) {
				if !alike {
					ms = int64(rng.IntN(3))
				}
				k := id(1 + rng.IntN(ids))
				if rng.IntN(2) == 0 {
					ops = append(ops, store.DispatchMark(k, ms))
				} else {
					ops = append(ops, store.SetStatus(k, store.Status(1+rng.IntN(2)), ms))
				}
			}
		default: // a run of deletes
			for range 1 + rng.IntN(6) {
				k := id(1 + rng.IntN(ids))
				delete(exists, k)
				ops = append(ops, store.DeleteJob(k))
			}
		}
	}
	flush()
	return groups
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// stored is what a store holds: every job, and the error records of jobs
// 1..8 whether they exist or not (a deleted job must leave none).
type stored struct {
	Jobs     []store.Job
	Payloads []store.JobPayload // what a dispatch reads, apart from the rows
	Errors   [][]store.ErrorRecord
}

func contents(t *testing.T, b *testBundle) stored {
	t.Helper()
	var out stored
	ids := b.ids(t)
	for _, id := range ids {
		j, err := b.db.GetJob(b.ctx, id, 0)
		require.NoError(t, err)
		out.Jobs = append(out.Jobs, j)
	}
	payloads, err := b.db.Payloads(b.ctx, ids)
	require.NoError(t, err)
	slices.SortFunc(payloads, func(x, y store.JobPayload) int { return strings.Compare(x.ID, y.ID) })
	out.Payloads = payloads
	for k := 1; k <= 8; k++ {
		errs, _, err := b.db.ListErrors(b.ctx, id(k), 0, store.Asc, 100)
		require.NoError(t, err)
		out.Errors = append(out.Errors, errs)
	}
	return out
}
