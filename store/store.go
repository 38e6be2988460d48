package store

import (
	"context"
	"io"
	"time"
)

// Store is zizq's durable record behind one interface: an append-only log
// of ops with group commit, the reads the API needs, and a one-pass load for
// start-up. It is written for a local database and a network one alike:
// ops are appended in groups and committed many groups to a transaction,
// reads take whole batches, and nothing asks for one round trip per row.
// store/sqlite and store/postgres implement it; store/storetest is the
// conformance suite both pass.
//
// Every method is safe for concurrent use.
type Store interface {
	// Append queues ops to commit in one transaction after every group
	// appended before. It never blocks, and a group is never split: it
	// commits whole or fails whole, alone, however the store batches
	// groups into transactions (group commit). A group holding an
	// InsertJob commits in the enqueue commit mode.
	Append(ops ...Op) Pending
	// Barrier returns once every group appended before the call has
	// committed or failed (failures go to each group's Pending, not here).
	Barrier(ctx context.Context) error

	// RecoverInFlight returns every in-flight job to ready and returns how
	// many there were; the change has committed when it returns. Call it at
	// start, once Load has rebuilt the engine and before anything is
	// dispatched: Load reports those jobs as in flight, so the engine knows
	// which they were (a queued one takes its unique key back if free).
	RecoverInFlight(ctx context.Context) (int64, error)
	// Load reads, from one consistent snapshot, what the engine needs at
	// start and nothing more, calling l's functions in this order: every
	// budget, by key; every live job (scheduled, ready, in flight), without
	// its payload, in (priority, id) order; the unique keys (every job with
	// a key that is live or holds it), in any order; the batch of every live
	// batched job, by id; the purge schedule (completed and dead jobs whose
	// purge_at is set), by (purge_at, id); and once, the
	// greatest job ID the store ever held ("" if none), deleted and purged
	// jobs included. It stops at the first error a function returns and
	// returns it. Writes go on meanwhile and are not seen.
	Load(ctx context.Context, l Loader) error

	// GetJob returns the job with the given ID, or ErrNotFound if there is
	// none or its purge_at is set and not after now (0: no such check).
	GetJob(ctx context.Context, id string, now int64) (Job, error)
	// ListJobs returns up to limit (> 0) jobs matching f by ID in order,
	// after the exclusive cursor from ("" = from the start). more reports
	// whether at least one more matching job follows the page.
	ListJobs(ctx context.Context, f Filter, from string, o Order, limit int) (jobs []Job, more bool, err error)
	// CountJobs returns how many jobs match f.
	CountJobs(ctx context.Context, f Filter) (int64, error)
	// JobIDs returns the ID of every job matching f, ascending.
	JobIDs(ctx context.Context, f Filter) ([]string, error)
	// Queues returns, sorted by byte order, the distinct queue names of
	// the stored jobs that are not ready, and possibly of some that are: a
	// store may keep no index of ready jobs by queue, and the caller adds
	// the queues of the live jobs it holds.
	Queues(ctx context.Context) ([]string, error)
	// ListErrors returns up to limit (> 0) error records of a job by
	// attempt in order, after the exclusive cursor from (0 = from the
	// start). more reports whether at least one more record follows.
	ListErrors(ctx context.Context, jobID string, from uint32, o Order, limit int) ([]ErrorRecord, bool, error)
	// GetJobs returns the jobs of ids, whole (payloads included), in any
	// order; IDs of no job are skipped, and purge_at is not looked at. It
	// is one round trip per call, for any number of IDs (the engine asks
	// for the payloads of a batch of dispatched jobs this way).
	GetJobs(ctx context.Context, ids []string) ([]Job, error)
	// Payloads returns what a dispatch reads back of the jobs of ids: each
	// one's payload and failed_at, in any order; IDs of no job are
	// skipped. It is one round trip per call, like GetJobs, and reads
	// nothing else of the row.
	Payloads(ctx context.Context, ids []string) ([]JobPayload, error)
	// GetError returns one error record, or ErrNotFound.
	GetError(ctx context.Context, jobID string, attempt uint32) (ErrorRecord, error)
	// Budgets returns every budget configuration, sorted by key.
	Budgets(ctx context.Context) ([]Budget, error)
	// CronGroups returns every cron group, by name, each with its entries
	// by name (the core reads them once at start).
	CronGroups(ctx context.Context) ([]CronGroup, error)

	// Backup writes a consistent snapshot of the store, as of the call, as
	// a tar.gz archive; writes go on meanwhile.
	Backup(ctx context.Context, w io.Writer) error
	// Compact returns the space of deleted and purged jobs to the file
	// system and empties the store's log, as far as the backend can, then
	// returns (for SQLite: an incremental vacuum of every free page, then a
	// TRUNCATE checkpoint of the WAL). Writes wait meanwhile. An error says
	// the compaction did not finish; the store works on either way.
	Compact(ctx context.Context) error
	// Sizes returns the bytes the store occupies: its data and its log
	// (for SQLite, the database file and the WAL). Cheap: no query.
	Sizes() (dbBytes, walBytes int64)
	// QueueDepth returns how many appended groups have not committed or
	// failed yet (the group-commit queue, the batch being committed
	// included). Cheap: no query.
	QueueDepth() int
	// Close commits everything appended so far and releases the store.
	// Appends made after Close fail with ErrUnavailable; Close is
	// idempotent.
	Close() error
}

// CommitInfo describes one transaction of a store's writer, for the
// OnCommit hook of the backends' options.
type CommitInfo struct {
	Groups   int           // appended groups committed together (group commit)
	Ops      int           // ops those groups held
	Inserts  int           // jobs inserted (enqueued) by the groups that committed
	Duration time.Duration // from BEGIN to the end of COMMIT, retries included
	Failed   bool          // at least one group failed
}

// Pending is one appended group of ops.
type Pending interface {
	// Wait returns once the transaction holding the group has committed,
	// with nil, or has failed, with its error. If ctx ends first it returns
	// ctx's error; the group still commits (or fails) later.
	Wait(ctx context.Context) error
}

// Loader receives what Store.Load reads, in this order: the budgets, the
// start, the live jobs, unique keys, batches and purges. A nil function
// skips its part.
type Loader struct {
	Budget func(Budget) error
	Start  func(LoadStart) error
	Job    func(LiveJob) error // in (priority, id) order
	Unique func(UniqueJob) error
	Batch  func(LiveBatch) error
	Purge  func(id string, at int64) error
}

// LoadStart is what Load tells before the first live job.
type LoadStart struct {
	// MaxID is the greatest job ID the store ever held ("" for none): every
	// later job's ID must sort after it.
	MaxID string
	// Plain reports that no live job has a unique key or belongs to a
	// batch: nothing Load reads after the jobs concerns a live one, so the
	// jobs read so far may be served while the rest are read.
	Plain bool
}

// UniqueJob is a job's unique key as Load reads it: a live job's, whether
// it holds the key or not, or a finished job's that still holds it.
type UniqueJob struct {
	ID     string
	Key    string
	While  UniqueWhile
	Status Status
	// Holds reports whether the job is its key's holder: at most one job
	// per key is (see InsertJob, HoldUniqueKey and ReleaseUniqueKey).
	Holds bool
}

// JobPayload is what a dispatch reads back of a job: the engine holds
// neither its payload nor, for a job restored at start, its last failure.
type JobPayload struct {
	ID       string
	Payload  []byte // nil when empty
	FailedAt int64
}

// LiveJob is what the engine needs of a live job: no payload, and none of
// the timestamps it does not decide with.
type LiveJob struct {
	ID         string
	Queue      string
	Type       string
	Priority   uint16
	Status     Status
	ReadyAt    int64
	Attempts   uint32
	RetryLimit *uint32
	Backoff    *Backoff
	Retention  *Retention
	Budgets    []Binding
	FairTag    int64 // 0: none (see Job.FairTag)
	StartBy    int64 // 0: none (see Job.StartBy)
}

// LiveBatch is the batch of a live batched job, loaded apart from its
// LiveJob because few jobs have one.
type LiveBatch struct {
	ID    string
	Batch BatchConfig
	Open  bool
}
