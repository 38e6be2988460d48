package store

// Partial updates of a job row: each writes some columns and never the
// payload, so the engine, which keeps no payload, can journal its changes.

// JobPatch holds the patchable fields of a job, each its full new value
// (a nil override clears it).
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

// Retry records a failure that retries: attempts, failed_at, and the new
// status (scheduled, or ready when due at once) and ready_at.
func Retry(id string, attempts uint32, failedAt, readyAt int64, status Status) Op {
	return Op{kind: opUpdate, upd: updRetry, id: id, args: []any{id, int64(attempts), failedAt, readyAt, int64(status)}}
}

// Finish makes a job completed or dead, its row kept until purgeAt.
func Finish(id string, status Status, attempts uint32, failedAt, completedAt, purgeAt int64) Op {
	var purge any
	if purgeAt != 0 {
		purge = purgeAt
	}
	return Op{kind: opUpdate, upd: updFinish, id: id, args: []any{id, int64(status), int64(attempts), failedAt, completedAt, purge}}
}

// PatchJob writes a job's patchable fields.
func PatchJob(p JobPatch) Op {
	j := Job{RetryLimit: p.RetryLimit, Backoff: p.Backoff, Retention: p.Retention}
	all := jobArgs(&j)
	return Op{kind: opUpdate, upd: updPatch, id: p.ID, args: []any{p.ID, p.Queue, int64(p.Priority), int64(p.Status), p.ReadyAt,
		all[8], all[9], all[10], all[11], all[12], all[13]}}
}

// SetBudgets replaces a job's budget bindings.
func SetBudgets(id string, budgets []Binding) Op {
	var enc any
	if len(budgets) > 0 {
		enc = encodeBindings(budgets)
	}
	return Op{kind: opUpdate, upd: updBudgets, id: id, args: []any{id, enc}}
}

type updateKind uint8

const (
	updRetry updateKind = iota
	updFinish
	updPatch
	updBudgets
	numUpdates
)

var updateSQL = [numUpdates]string{
	updRetry:  `UPDATE jobs SET attempts = ?2, failed_at = ?3, ready_at = ?4, status = ?5 WHERE id = ?1`,
	updFinish: `UPDATE jobs SET status = ?2, attempts = ?3, failed_at = ?4, completed_at = ?5, purge_at = ?6 WHERE id = ?1`,
	updPatch: `UPDATE jobs SET queue = ?2, priority = ?3, status = ?4, ready_at = ?5, retry_limit = ?6,
		backoff_exponent = ?7, backoff_base_ms = ?8, backoff_jitter_ms = ?9,
		retention_completed_ms = ?10, retention_dead_ms = ?11 WHERE id = ?1`,
	updBudgets: `UPDATE jobs SET budgets = ?2 WHERE id = ?1`,
}
