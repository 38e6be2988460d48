package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/zizq/zizq/server/batchexpr"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// Batched jobs (docs/API.md §Batched jobs). An item with a batch and no future
// ready_at folds into the pending job of its batch key when the pending job's
// when holds over ($existing = its payload, $new = the item's); the pending
// job's fold makes its new payload and it keeps its place. When it does not
// hold, the pending job is sealed and the item becomes the key's pending job.
// Every batched item is first dry-run with its own programs on its own
// payload; scheduled ones never fold but keep their batch.
//
// The programs run in the sandbox (batchexpr), outside the engine lock,
// and may be slow. Items of one key are decided one enqueue at a time (a
// lock per key, held until the enqueue's commit is known), so the pending
// job a decision reads cannot be folded into by anyone else meanwhile; a
// dispatch, delete or patch can still close it, and the engine then refuses
// the plan (ErrBatchMoved) and the enqueue decides again.

// BatchEvaluator runs the programs of batched jobs (a batchexpr.Sandbox).
type BatchEvaluator interface {
	Run(ctx context.Context, t batchexpr.Task) (batchexpr.Answer, error)
	Close()
}

// maxBatchAttempts bounds how often an enqueue decides again because a
// pending job it read was dispatched or deleted meanwhile: under the key
// locks that can happen once a key, so this only guards against a bug.
const maxBatchAttempts = 16

// enqueueBatched enqueues specs of which some are batched, with the ops of
// with in the same commit (see enqueue).
func (s *Service) enqueueBatched(ctx context.Context, specs []engine.NewJob, with []store.Op) ([]engine.Enqueued, error) {
	now := s.nowMs()
	var keys []string
	for _, sp := range specs {
		if foldable(sp, now) {
			keys = append(keys, sp.Batch.Key)
		}
	}
	unlock, err := s.batchKeys.lock(ctx, keys)
	if err != nil {
		return nil, err
	}
	defer unlock()
	d := &batchDecision{s: s, specs: specs, with: with, now: now, checked: make([]bool, len(specs))}
	for range maxBatchAttempts {
		out, err := d.run(ctx)
		if !errors.Is(err, engine.ErrBatchMoved) {
			return out, err
		}
	}
	return nil, fmt.Errorf("enqueue: pending batch jobs kept changing")
}

// foldable reports whether an item can fold: batched and not scheduled.
func foldable(sp engine.NewJob, now int64) bool {
	return sp.Batch != nil && (sp.ReadyAt == nil || *sp.ReadyAt <= now)
}

// batchDecision decides the items of one enqueue against the pending jobs
// as they are, then commits; checked remembers the dry runs done, which
// do not depend on state.
type batchDecision struct {
	s       *Service
	specs   []engine.NewJob
	with    []store.Op // committed with the jobs (see enqueue)
	now     int64
	checked []bool

	keys    map[string]*batchKey
	news    []engine.NewJob // the jobs to create
	origin  []int           // the item of each new job
	outcome []itemOutcome   // per item
}

// batchKey is the state of one key while the items are decided: the
// pending job from before the enqueue (ext), and the current pending job,
// ext or a new job of the enqueue.
type batchKey struct {
	ext     *extPending
	cur     int // index in news of the current pending job; -1: ext (or none)
	cfg     store.BatchConfig
	payload []byte
	hasCur  bool
}

// extPending is a pending job from before the enqueue.
type extPending struct {
	seen    engine.SeenBatch
	payload []byte
	folded  bool
	sealed  bool
}

// itemOutcome is what an item became: new job news[job], or a fold into
// key's pending job (ext when ext, else news[job]).
type itemOutcome struct {
	job    int
	folded bool
	ext    string // key of the ext job folded into
}

func (d *batchDecision) run(ctx context.Context) ([]engine.Enqueued, error) {
	if err := d.readPending(ctx); err != nil {
		return nil, err
	}
	d.news, d.origin, d.outcome = nil, nil, make([]itemOutcome, len(d.specs))
	for i := range d.specs {
		if err := d.decide(ctx, i); err != nil {
			return nil, err
		}
	}
	return d.commit(ctx)
}

// readPending reads the pending job of every key the items can fold into,
// with its payload: from the cache of recent payloads, else the store
// (which has it: its enqueue, and every fold into it, committed under the
// key's lock).
func (d *batchDecision) readPending(ctx context.Context) error {
	d.keys = map[string]*batchKey{}
	var missing []string
	for _, sp := range d.specs {
		if !foldable(sp, d.now) || d.keys[sp.Batch.Key] != nil {
			continue
		}
		k := &batchKey{cur: -1}
		d.keys[sp.Batch.Key] = k
		p, ok := d.s.engine.PendingBatch(sp.Batch.Key)
		k.ext = &extPending{seen: engine.SeenBatch{Key: sp.Batch.Key}}
		if !ok {
			continue
		}
		k.ext.seen.ID, k.ext.seen.Gen = p.ID, p.Gen
		k.cfg, k.hasCur = p.Config, true
		if payload, ok := d.s.cache.peek(p.ID); ok {
			k.ext.payload = payload
		} else {
			missing = append(missing, p.ID)
		}
	}
	if len(missing) > 0 {
		if err := d.readStored(ctx, missing); err != nil {
			return err
		}
	}
	for _, k := range d.keys {
		k.payload = k.ext.payload
	}
	return nil
}

// readStored reads the payloads of pending jobs the cache did not have.
func (d *batchDecision) readStored(ctx context.Context, ids []string) error {
	rows, err := d.s.store.GetJobs(ctx, ids)
	if err != nil {
		return translate(err)
	}
	byID := make(map[string][]byte, len(rows))
	for _, r := range rows {
		byID[r.ID] = r.Payload
	}
	for _, k := range d.keys {
		if k.hasCur && k.ext.payload == nil {
			p, ok := byID[k.ext.seen.ID]
			if !ok {
				return engine.ErrBatchMoved // deleted since: decide again
			}
			k.ext.payload = p
		}
	}
	return nil
}

// decide runs item i's programs and records what it becomes.
func (d *batchDecision) decide(ctx context.Context, i int) error {
	sp := d.specs[i]
	if sp.Batch == nil {
		d.create(i, sp)
		return nil
	}
	task := batchexpr.Task{New: sp.Payload}
	if !d.checked[i] {
		task.Check = &batchexpr.Config{When: sp.Batch.When, Fold: sp.Batch.Fold}
	}
	k := d.keys[sp.Batch.Key]
	into := foldable(sp, d.now) && k.hasCur
	if into {
		task.Into, task.Existing = &batchexpr.Config{When: k.cfg.When, Fold: k.cfg.Fold}, k.payload
	}
	var ans batchexpr.Answer
	if task.Check != nil || task.Into != nil {
		var err error
		if ans, err = d.s.batches.Run(ctx, task); err != nil {
			return batchRefusal(i, err)
		}
	}
	d.checked[i] = true
	switch {
	case !foldable(sp, d.now):
		d.create(i, sp) // scheduled: keeps its batch, takes no folds
	case into && ans.Folds:
		d.fold(i, k, ans.Payload)
	default:
		d.seal(k)
		sp.BatchOpen = true
		d.create(i, sp)
		k.cur, k.cfg, k.payload, k.hasCur = len(d.news)-1, *sp.Batch, sp.Payload, true
	}
	return nil
}

func (d *batchDecision) create(i int, sp engine.NewJob) {
	d.outcome[i] = itemOutcome{job: len(d.news)}
	d.news = append(d.news, sp)
	d.origin = append(d.origin, i)
}

// fold records item i's fold into k's current pending job.
func (d *batchDecision) fold(i int, k *batchKey, payload []byte) {
	k.payload = payload
	if k.cur >= 0 {
		d.news[k.cur].Payload = payload
		d.outcome[i] = itemOutcome{job: k.cur, folded: true}
		return
	}
	k.ext.payload, k.ext.folded = payload, true
	d.outcome[i] = itemOutcome{folded: true, ext: k.ext.seen.Key}
}

// seal closes k's current pending job, if any.
func (d *batchDecision) seal(k *batchKey) {
	switch {
	case !k.hasCur:
	case k.cur >= 0:
		d.news[k.cur].BatchOpen = false
	default:
		k.ext.sealed = true
	}
}

// plan is what the engine must apply for the ext pending jobs.
func (d *batchDecision) plan() engine.BatchPlan {
	var p engine.BatchPlan
	keys := make([]string, 0, len(d.keys))
	for key := range d.keys {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		ext := d.keys[key].ext
		p.Seen = append(p.Seen, ext.seen)
		if ext.folded {
			p.Folds = append(p.Folds, engine.BatchFold{Key: key, ID: ext.seen.ID, Payload: ext.payload})
		}
		if ext.sealed {
			p.Seals = append(p.Seals, key)
		}
	}
	return p
}

// commit enqueues the new jobs with the plan and answers every item.
func (d *batchDecision) commit(ctx context.Context) ([]engine.Enqueued, error) {
	plan := d.plan()
	jobs, folded, err := d.s.commitEnqueue(ctx, d.news, plan, d.with)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) && ce.Item >= 0 && ce.Item < len(d.origin) {
			ce.Item = d.origin[ce.Item]
		}
		return nil, err
	}
	byKey := make(map[string]store.Job, len(folded))
	for i, f := range plan.Folds {
		byKey[f.Key] = folded[i]
	}
	out := make([]engine.Enqueued, len(d.specs))
	for i, o := range d.outcome {
		if o.ext != "" {
			out[i] = engine.Enqueued{Job: byKey[o.ext], Folded: true}
			continue
		}
		out[i] = jobs[o.job]
		out[i].Folded = o.folded
	}
	return out, nil
}

// batchRefusal makes an evaluator's refusal of item i the client's error,
// and a sandbox without room for it a busy service.
func batchRefusal(i int, err error) error {
	var be *batchexpr.Error
	switch {
	case errors.As(err, &be):
		return &Error{Kind: KindUnprocessable, Msg: be.Error(), Item: i, err: err}
	case errors.Is(err, batchexpr.ErrBusy):
		return &Error{Kind: KindBusy, Msg: err.Error(), Item: i, err: err}
	}
	return fmt.Errorf("evaluate batch of item %d: %w", i, err)
}

// keyLocks serialises the enqueues that touch the same batch keys.
type keyLocks struct {
	mu   sync.Mutex // guards held
	held map[string]*keyLock
}

type keyLock struct {
	token chan struct{} // full while held
	users int           // holders and waiters
}

func newKeyLocks() *keyLocks { return &keyLocks{held: map[string]*keyLock{}} }

// lock takes the locks of keys in sorted order (so that two enqueues never
// wait on each other) and returns what releases them; it gives up when
// ctx ends.
func (l *keyLocks) lock(ctx context.Context, keys []string) (func(), error) {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	var taken []*keyLock
	unlock := func() {
		for i, kl := range taken {
			<-kl.token
			l.leave(keys[i], kl)
		}
	}
	for _, key := range keys {
		kl := l.join(key)
		select {
		case kl.token <- struct{}{}:
			taken = append(taken, kl)
		case <-ctx.Done():
			l.leave(key, kl)
			unlock()
			return nil, ctx.Err()
		}
	}
	return unlock, nil
}

func (l *keyLocks) join(key string) *keyLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	kl := l.held[key]
	if kl == nil {
		kl = &keyLock{token: make(chan struct{}, 1)}
		l.held[key] = kl
	}
	kl.users++
	return kl
}

func (l *keyLocks) leave(key string, kl *keyLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if kl.users--; kl.users == 0 {
		delete(l.held, key)
	}
}
