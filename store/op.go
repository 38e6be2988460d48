package store

// Op is one change to the store, built by InsertJob, SetStatus and the other
// constructors and applied by a Store's Append. Each op is a value of one of
// the *Op types below; a backend applies them with a type switch and fails a
// group holding an op it does not know. Only this package defines ops, so a
// new op is added here and then to every backend (the conformance suite,
// store/storetest, tells which ones lack it).
//
// Ops keep references to the slices and pointers of the values they were
// built from (payloads, bindings, overrides) until they commit: do not
// modify those after building the op.
type Op interface {
	storeOp() // seals the set of ops to this package
}

// InsertJobOp adds a new job; see InsertJob.
type InsertJobOp struct{ Job Job }

// PutJobOp replaces the fields of an existing job but its payload; see
// PutJob.
type PutJobOp struct{ Job Job }

// SetStatusOp changes a job's status; see SetStatus and DispatchMark.
type SetStatusOp struct {
	ID         string
	Status     Status
	DequeuedAt int64 // 0 = unchanged
	// Lazy says the store may hold the change back (see DispatchMark).
	Lazy bool
}

// RetryOp records a failure that the job retries after; see Retry.
type RetryOp struct {
	ID       string
	Attempts uint32
	FailedAt int64
	ReadyAt  int64
	Status   Status // Scheduled or Ready
}

// FinishOp makes a job completed or dead and keeps its row; see Finish.
type FinishOp struct {
	ID          string
	Status      Status // Completed or Dead
	Attempts    uint32
	FailedAt    int64
	CompletedAt int64
	PurgeAt     int64
}

// JobPatch is the new value of every patchable field of a job (PATCH
// /jobs): each field is written as it is, a nil pointer clearing the
// override. The fields it does not name (type, payload, budgets, attempts,
// timestamps but ready_at) are left as they are.
type JobPatch struct {
	ID         string
	Queue      string
	Priority   uint16
	Status     Status
	ReadyAt    int64
	RetryLimit *uint32
	Backoff    *Backoff
	Retention  *Retention
}

// PatchJobOp writes a JobPatch; see PatchJob.
type PatchJobOp struct{ Patch JobPatch }

// SetBudgetsOp replaces a job's budget bindings; see SetBudgets.
type SetBudgetsOp struct {
	ID      string
	Budgets []Binding
}

// SetPayloadOp replaces a job's payload; see SetPayload.
type SetPayloadOp struct {
	ID      string
	Payload []byte
}

// CloseBatchOp closes a job's batch; see CloseBatch.
type CloseBatchOp struct{ ID string }

// UniqueHolderOp makes a job its unique key's holder, or not; see
// HoldUniqueKey and ReleaseUniqueKey.
type UniqueHolderOp struct {
	ID    string
	Holds bool
}

// ClearStartByOp removes a job's deadline for waiting; see ClearStartBy.
type ClearStartByOp struct{ ID string }

// DeleteJobOp deletes a job and its error records; see DeleteJob.
type DeleteJobOp struct{ ID string }

// AddErrorOp records a failure of a job; see AddError.
type AddErrorOp struct{ Record ErrorRecord }

// PutBudgetOp inserts or replaces a budget; see PutBudget.
type PutBudgetOp struct{ Budget Budget }

// SpendBudgetOp records what a calendar budget spent; see SpendBudget.
type SpendBudgetOp struct {
	Key   string
	Spent Spent
}

// DeleteBudgetOp deletes a budget; see DeleteBudget.
type DeleteBudgetOp struct{ Key string }

// DeleteEverythingOp deletes every job, error record and budget; see
// DeleteEverything.
type DeleteEverythingOp struct{}

func (InsertJobOp) storeOp()        {}
func (PutJobOp) storeOp()           {}
func (SetStatusOp) storeOp()        {}
func (RetryOp) storeOp()            {}
func (FinishOp) storeOp()           {}
func (PatchJobOp) storeOp()         {}
func (SetBudgetsOp) storeOp()       {}
func (SetPayloadOp) storeOp()       {}
func (CloseBatchOp) storeOp()       {}
func (UniqueHolderOp) storeOp()     {}
func (ClearStartByOp) storeOp()     {}
func (DeleteJobOp) storeOp()        {}
func (AddErrorOp) storeOp()         {}
func (PutBudgetOp) storeOp()        {}
func (SpendBudgetOp) storeOp()      {}
func (DeleteBudgetOp) storeOp()     {}
func (DeleteEverythingOp) storeOp() {}

// InsertJob adds a new job. It fails (and with it its group) if a job with
// the same ID exists. A group holding an InsertJob commits in the enqueue
// commit mode.
//
// Every field reads back as written, with these normalisations: an empty
// Payload or Budgets reads back as nil, a Retention with neither side set
// as nil, and UniqueWhile as UniqueQueued when UniqueKey is "".
//
// A job with a UniqueKey becomes its key's holder, and the key's previous
// holder, if any, stops holding it: a key has at most one holder, always
// the job the engine last gave it to.
func InsertJob(j Job) Op { return InsertJobOp{Job: j} }

// PutJob replaces every field of an existing job except its payload, its
// unique key and its fair tag, which stay as inserted (j.Payload,
// j.UniqueKey, j.UniqueWhile and j.FairTag are ignored); its start_by is
// written as any other field. It does nothing if the job does not exist.
// It is the engine's whole-row write of round 1, kept while the engine
// moves to the partial ops.
func PutJob(j Job) Op { return PutJobOp{Job: j} }

// SetStatus changes a job's status and, when dequeuedAt is not 0, its
// dequeued_at: dispatch (in_flight, the dispatch time) and requeue (ready,
// 0). It does nothing if the job does not exist.
func SetStatus(id string, s Status, dequeuedAt int64) Op {
	return SetStatusOp{ID: id, Status: s, DequeuedAt: dequeuedAt}
}

// DispatchMark records a job's dispatch: status in_flight and dequeued_at.
// Unlike SetStatus, a store may write it lazily, a moment later than ops
// appended after it, and not at all if the job is deleted meanwhile: an
// acknowledged job then costs one write, not two. Nothing is lost by a mark
// that a crash drops, since a restart returns in-flight jobs to ready. A
// lazy mark is still seen by every read after Barrier, by every later op on
// the same job, and by Backup; the Pending of its group says only that the
// store has it in hand.
func DispatchMark(id string, dequeuedAt int64) Op {
	return SetStatusOp{ID: id, Status: InFlight, DequeuedAt: dequeuedAt, Lazy: true}
}

// Retry records a failure after which the job runs again: its attempts
// and failed_at, and when and how it is queued again (status Scheduled with
// a future readyAt, or Ready). The error record goes in its own AddError.
// It does nothing if the job does not exist.
func Retry(id string, attempts uint32, failedAt, readyAt int64, s Status) Op {
	return RetryOp{ID: id, Attempts: attempts, FailedAt: failedAt, ReadyAt: readyAt, Status: s}
}

// Finish makes a job Completed or Dead while its row is kept for
// retention: its status, attempts, failed_at, completed_at and purge_at
// (0 = unset) are written as given. A job that is not kept is deleted with
// DeleteJob instead. It does nothing if the job does not exist.
func Finish(id string, s Status, attempts uint32, failedAt, completedAt, purgeAt int64) Op {
	return FinishOp{ID: id, Status: s, Attempts: attempts, FailedAt: failedAt, CompletedAt: completedAt, PurgeAt: purgeAt}
}

// PatchJob writes the patchable fields of a job (see JobPatch). It does
// nothing if the job does not exist.
func PatchJob(p JobPatch) Op { return PatchJobOp{Patch: p} }

// SetBudgets replaces a job's budget bindings (rebind); an empty list
// unbinds it. It does nothing if the job does not exist.
func SetBudgets(id string, bs []Binding) Op { return SetBudgetsOp{ID: id, Budgets: bs} }

// SetPayload replaces a job's payload (a batch fold); an empty payload
// reads back as nil. It does nothing if the job does not exist.
func SetPayload(id string, payload []byte) Op { return SetPayloadOp{ID: id, Payload: payload} }

// CloseBatch clears a job's BatchOpen: its batch takes no more folds. It
// does nothing if the job does not exist.
func CloseBatch(id string) Op { return CloseBatchOp{ID: id} }

// HoldUniqueKey makes a job with a unique key that key's holder (a job
// that returned to the queue and claims its key again); the key's previous
// holder, if any, stops holding it. It does nothing if the job does not
// exist or has no key.
func HoldUniqueKey(id string) Op { return UniqueHolderOp{ID: id, Holds: true} }

// ReleaseUniqueKey makes a job no longer its key's holder (a finished job
// whose scope ended). It does nothing if the job does not exist or does not
// hold a key. A deleted job holds nothing: DeleteJob needs no release.
func ReleaseUniqueKey(id string) Op { return UniqueHolderOp{ID: id} }

// ClearStartBy removes a job's start_by (Job.StartBy reads 0): a job that
// returns to the queue after its deadline has passed, having started in
// time, is not held to it again. It does nothing if the job does not
// exist or has none.
func ClearStartBy(id string) Op { return ClearStartByOp{ID: id} }

// DeleteJob deletes a job, its payload and its error records. It does
// nothing if the job does not exist.
func DeleteJob(id string) Op { return DeleteJobOp{ID: id} }

// AddError records a failure of a job, replacing a record of the same
// attempt. It does nothing if the job does not exist, so that no record
// outlives its job.
func AddError(r ErrorRecord) Op { return AddErrorOp{Record: r} }

// PutBudget inserts or replaces a budget's configuration by key. It
// leaves what the budget spent (Budget.Spent, written by SpendBudget) as
// it is: b.Spent is ignored, and a new budget has none.
func PutBudget(b Budget) Op { return PutBudgetOp{Budget: b} }

// SpendBudget records what a calendar budget spent in its current period
// (the engine writes it before it delivers a job that spent, and with the
// ack that settles one): Load gives it back as the budget's Spent. It does
// nothing if the budget does not exist.
func SpendBudget(key string, s Spent) Op { return SpendBudgetOp{Key: key, Spent: s} }

// DeleteBudget deletes a budget's configuration. It does nothing if there
// is none.
func DeleteBudget(key string) Op { return DeleteBudgetOp{Key: key} }

// DeleteEverything deletes every job, error record and budget (POST /reset).
func DeleteEverything() Op { return DeleteEverythingOp{} }
