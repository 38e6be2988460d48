package engine

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/zizq/zizq/store"
)

// The reference model's deadlines for waiting (issue 26 §3), as the rule
// reads: a job with a start_by that is not in flight at that instant (it
// waits in a line or for a worker, is scheduled, or is held by a fold)
// dies then, before anything else of that instant is decided; a job that
// comes back from flight (a failure, a disconnect) keeps its start_by only
// while it is still to come.

// setStartBy gives a job its start_by (ns), just enqueued: it is after now.
func (m *refModel) setStartBy(id string, ns int64) { m.jobs[id].startBy = ns }

// nextExpiry offers take the start_by of every job not in flight.
func (m *refModel) nextExpiry(take func(int64)) {
	for _, j := range m.jobs {
		if j.startBy != 0 && j.state != refInFlight {
			take(j.startBy)
		}
	}
}

// expireDue makes dead, now, every job not in flight whose start_by has
// come; it logs them by id.
func (m *refModel) expireDue() {
	var due []string
	for id, j := range m.jobs {
		if j.startBy != 0 && j.startBy <= m.now && j.state != refInFlight {
			due = append(due, id)
		}
	}
	sort.Strings(due)
	for _, id := range due {
		j := m.jobs[id]
		if j.state == refWaiting {
			m.leave(j)
		}
		delete(m.jobs, id)
		m.expired = append(m.expired, refDispatch{id: id, at: m.now})
	}
}

// keepStartBy drops the start_by of a job back from flight once it has
// come.
func (m *refModel) keepStartBy(j *refJob) {
	if j.startBy != 0 && j.startBy <= m.now {
		j.startBy = 0
	}
}

// randomStartBy gives about one enqueue in three a deadline for waiting,
// absolute or from now, within the times the property test advances by.
func (r *propRun) randomStartBy(spec *NewJob) {
	switch r.rng.IntN(6) {
	case 0:
		spec.StartBy = r.clk.Now().UnixMilli() + 1 + int64(r.rng.IntN(500))
	case 1:
		spec.StartWithinMs = 1 + int64(r.rng.IntN(500))
	}
}

// noteLate records a dispatch at or after the job's start_by: there must
// be none (checked by compareExpiries, outside the engine's lock).
func (r *propRun) noteLate(j store.Job, at time.Time) {
	if j.StartBy != 0 && at.UnixNano() >= j.StartBy*int64(time.Millisecond) {
		r.late = append(r.late, fmt.Sprintf("%s at %d, start_by %d", j.ID, at.UnixNano(), j.StartBy))
	}
}

// compareExpiries checks that no job was dispatched at or after its
// start_by and that the engine and the model let the same jobs die at the
// same instants (within one instant, in any order).
func (r *propRun) compareExpiries() {
	r.t.Helper()
	if len(r.late) > 0 {
		r.fail("dispatched at or after its start_by: %v", r.late)
	}
	got, want := slices.Clone(r.expired), slices.Clone(r.m.expired)
	byTime := func(a, b refDispatch) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id)) }
	slices.SortFunc(got, byTime)
	slices.SortFunc(want, byTime)
	if !slices.Equal(got, want) {
		r.fail("deaths by start_by differ: engine %v, model %v", got, want)
	}
}
