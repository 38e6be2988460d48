package engine

import (
	"slices"

	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// The unique keys' holder index (docs/API.md §Unique jobs), as Zizq keeps it:
//
//   - Each key points at its latest claimant: the last job created with it,
//     or a job that took it again when it was free. The claimant holds the
//     key while its own scope covers its status (queued: scheduled or
//     ready; active: also in flight; exists: until it is deleted or
//     purged); a queued claimant in flight holds nothing, so the key is
//     free, yet it still points at it.
//   - An enqueue with a key is a duplicate when the key's holder is in the
//     scope of the incoming job (its unique_while against the holder's
//     status); otherwise it is created and becomes the key's claimant.
//   - A queued job that returns to the queue (backoff, and, our decision,
//     a disconnect) takes its key again unless another job holds it. A
//     claimant that finishes lets the key go, unless its scope is exists
//     and its row is kept; a deleted or purged one lets it go too. PATCH
//     moves a job between scheduled and ready only, both in every scope:
//     it changes no holder.
//
// The store keeps the same pointer (store.InsertJob, HoldUniqueKey,
// ReleaseUniqueKey), so a restart finds the index as it was. Jobs left in
// flight come back ready: a claimant among them holds its key again, and a
// queued one whose key no job holds takes it, as Zizq's recovery does
// (recovered).
//
// After a failed commit the enqueue is undone and its key points nowhere,
// where the store still names the job it displaced; the next job to take
// the key takes it in the store too (InsertJob and HoldUniqueKey move the
// key from whichever job holds it).
type uniqueIndex struct {
	jobs     map[int32]uniqueJob     // live jobs with a key, by record
	claims   map[string]jobid.ID     // key → its latest claimant, live or finished
	finished map[jobid.ID]finishedID // finished claimants (exists scope), until deleted or purged
}

// uniqueJob is a live job's unique key and scope.
type uniqueJob struct {
	key   string
	while store.UniqueWhile
}

// finishedID is a finished job that still holds its key.
type finishedID struct {
	key    string
	status store.Status
}

func newUniqueIndex() uniqueIndex {
	return uniqueIndex{jobs: map[int32]uniqueJob{}, claims: map[string]jobid.ID{}, finished: map[jobid.ID]finishedID{}}
}

// setUnique records a live job's key.
func (e *Engine) setUnique(idx int32, key string, w store.UniqueWhile) {
	if key == "" {
		return
	}
	e.unique.jobs[idx] = uniqueJob{key: key, while: w}
	e.rec(idx).flags |= recUnique
}

// uniqueOf returns a live job's key and scope.
func (e *Engine) uniqueOf(idx int32) (uniqueJob, bool) {
	if e.rec(idx).flags&recUnique == 0 {
		return uniqueJob{}, false
	}
	return e.unique.jobs[idx], true
}

// statusOf is a live job's status as the wire has it.
func (e *Engine) statusOf(idx int32) store.Status {
	switch e.rec(idx).state {
	case stScheduled:
		return store.Scheduled
	case stInFlight:
		return store.InFlight
	}
	return store.Ready
}

// holder returns the job that holds key now and its status.
func (e *Engine) holder(key string) (jobid.ID, store.Status, bool) {
	id, ok := e.unique.claims[key]
	if !ok {
		return jobid.ID{}, 0, false
	}
	if f, done := e.unique.finished[id]; done {
		return id, f.status, true
	}
	idx, ok := e.ids.get(id)
	if !ok { // cannot happen: a claimant that leaves the engine lets its key go
		return jobid.ID{}, 0, false
	}
	st := e.statusOf(idx)
	return id, st, e.unique.jobs[idx].while.Covers(st)
}

// duplicate is a request of an enqueue that creates nothing: another job
// holds its key. item is the index of that job in the same request, or -1
// for a job that was there before.
type duplicate struct {
	item   int
	holder jobid.ID
}

// duplicates decides which requests of an enqueue are duplicates (nil:
// none). A later request with the key of an earlier one that is created is
// a duplicate of it, whatever its scope: a new job is ready or scheduled.
func (e *Engine) duplicates(specs []NewJob) []*duplicate {
	var out []*duplicate
	var created map[string]int
	for i, s := range specs {
		if s.UniqueKey == "" {
			continue
		}
		var d *duplicate
		if j, ok := created[s.UniqueKey]; ok {
			d = &duplicate{item: j}
		} else if id, st, ok := e.holder(s.UniqueKey); ok && s.UniqueWhile.Covers(st) {
			d = &duplicate{item: -1, holder: id}
		}
		if d == nil {
			if created == nil {
				created = map[string]int{}
			}
			created[s.UniqueKey] = i
			continue
		}
		if out == nil {
			out = make([]*duplicate, len(specs))
		}
		out[i] = d
	}
	return out
}

// claim makes a job its key's claimant (a new job's InsertJob moves the
// key in the store; a requeued job journals HoldUniqueKey).
func (e *Engine) claim(j ref, key string) {
	if prev, ok := e.unique.claims[key]; ok {
		delete(e.unique.finished, prev)
	}
	e.unique.claims[key] = j.id
}

// existing returns the job a duplicate of an earlier job names, as the
// engine knows it: a live job's view, or what is known of a finished one
// (the store has the rest).
func (e *Engine) existing(d *duplicate) store.Job {
	id := d.holder.String()
	if idx, ok := e.ids.get(d.holder); ok {
		return e.view(id, idx)
	}
	f := e.unique.finished[d.holder]
	return store.Job{ID: id, Status: f.status, UniqueKey: f.key, UniqueWhile: store.UniqueExists}
}

// requeued is called when a live job returns to the queue (a retry after
// backoff, a disconnect, a readmitted dead job): a queued job (any job,
// when any is true) takes its key if no job holds it (its claimant may be
// itself, back in the queue, or a queued job still in flight). It appends
// the op that records a claim.
func (e *Engine) requeued(ops []store.Op, j ref, any bool) []store.Op {
	u, ok := e.uniqueOf(j.idx)
	if !ok || (!any && u.while != store.UniqueQueued) {
		return ops
	}
	if _, _, held := e.holder(u.key); held {
		return ops
	}
	e.claim(j, u.key)
	return append(ops, store.HoldUniqueKey(j.id.String()))
}

// finishUnique is called when a live job finishes, kept tells whether its
// row stays: a claimant with the exists scope keeps holding its key as a
// finished job, any other lets it go (the op that records it, when the row
// stays).
func (e *Engine) finishUnique(ops []store.Op, j ref, id string, status store.Status, kept bool) []store.Op {
	u, ok := e.uniqueOf(j.idx)
	if !ok || e.unique.claims[u.key] != j.id {
		return ops
	}
	if kept && u.while == store.UniqueExists {
		e.unique.finished[j.id] = finishedID{key: u.key, status: status}
		return ops
	}
	delete(e.unique.claims, u.key)
	if kept {
		ops = append(ops, store.ReleaseUniqueKey(id))
	}
	return ops
}

// forgetUnique drops a live job's key as it leaves the engine; a claimant
// that is not kept as a finished holder lets its key go.
func (e *Engine) forgetUnique(j ref) {
	u, ok := e.uniqueOf(j.idx)
	if !ok {
		return
	}
	delete(e.unique.jobs, j.idx)
	if _, kept := e.unique.finished[j.id]; !kept && e.unique.claims[u.key] == j.id {
		delete(e.unique.claims, u.key)
	}
}

// dropFinished lets a finished holder's key go when its row is deleted or
// purged.
func (e *Engine) dropFinished(id jobid.ID) {
	f, ok := e.unique.finished[id]
	if !ok {
		return
	}
	delete(e.unique.finished, id)
	if e.unique.claims[f.key] == id {
		delete(e.unique.claims, f.key)
	}
}

// readmitUnique is called when a dead job lives again: a finished holder
// holds its key as a live job; otherwise it takes the key if it is free,
// whatever its scope (it is queued again).
func (e *Engine) readmitUnique(ops []store.Op, j ref) []store.Op {
	if _, ok := e.unique.finished[j.id]; ok {
		delete(e.unique.finished, j.id)
		return ops
	}
	return e.requeued(ops, j, true)
}

// restoreUnique loads a job's key from the store (see Restorer.Unique).
func (e *Engine) restoreUnique(u store.UniqueJob) {
	id, ok := jobid.Parse(u.ID)
	if !ok {
		return
	}
	if idx, live := e.ids.get(id); live {
		e.setUnique(idx, u.Key, u.While)
		if u.Holds {
			e.unique.claims[u.Key] = id
		}
		return
	}
	// A finished job holds only with the exists scope; the store's mark on
	// any other is stale (the next claimant takes it over).
	if u.Holds && u.While == store.UniqueExists && !u.Status.Live() {
		e.unique.claims[u.Key] = id
		e.unique.finished[id] = finishedID{key: u.Key, status: u.Status}
	}
}

// recovered is Zizq's restart recovery of unique keys: each queued job the
// last run left in flight, in ID order, takes its key if no job holds it.
// (The claimant of a key holds it again without this: its key is still
// its own in the store.)
func (e *Engine) recovered(inFlight []ref) {
	slices.SortFunc(inFlight, func(a, b ref) int {
		if a.id.Less(b.id) {
			return -1
		}
		return 1 // IDs are unique
	})
	var ops []store.Op
	for _, j := range inFlight {
		ops = e.requeued(ops, j, false)
	}
	if len(ops) > 0 {
		e.journal.Append(ops...)
	}
}

// UniqueHolder returns the job holding key now, if any (for tests and
// diagnostics).
func (e *Engine) UniqueHolder(key string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	id, _, ok := e.holder(key)
	if !ok {
		return "", false
	}
	return id.String(), true
}
