package store

// opKind says what an Op does.
type opKind uint8

const (
	opNone opKind = iota // a no-op: the zero Op, or an op coalesced away
	opInsertJob
	opPutJob
	opSetStatus
	opDeleteJob
	opAddError
	opPutBudget
	opDeleteBudget
	opDeleteEverything
	opRecoverInFlight
	opUpdate // a partial update of a job row (op_partial.go)
	// opProbeNew stands for an InsertJob that coalescing removed together
	// with a later DeleteJob: it fails, as the insert would have, if the
	// job already exists.
	opProbeNew
)

// Op is one change to the store, built by InsertJob, PutJob, SetStatus and
// the other constructors, and applied by Append.
//
// Ops keep references to the slices and pointers of the values they were
// built from (payloads, bindings, overrides) until they commit: do not
// modify those after building the op.
type Op struct {
	kind   opKind
	status Status
	// private marks a job the store copied (to fold a SetStatus into it),
	// so it may be modified further without touching the caller's.
	private bool
	id      string // job ID, or budget key for budget ops
	at      int64  // SetStatus: dequeued_at, 0 = unchanged
	job     *Job
	rec     *ErrorRecord
	budget  *Budget
	count   *int64 // RecoverInFlight: rows changed
	upd     updateKind
	args    []any // opUpdate: the statement's arguments
}

// InsertJob adds a new job. It fails if a job with the same ID exists. A
// group holding an InsertJob commits in the enqueue commit mode.
//
// Every field reads back as written, with these normalisations: an empty
// Payload or Budgets reads back as nil, a Retention with neither side set
// as nil.
func InsertJob(j Job) Op { return Op{kind: opInsertJob, id: j.ID, job: &j} }

// PutJob replaces every field of an existing job (patch, failure,
// completion with retention). It does nothing if the job does not exist.
func PutJob(j Job) Op { return Op{kind: opPutJob, id: j.ID, job: &j} }

// SetStatus changes a job's status and, when dequeuedAt is not 0, its
// dequeued_at. It does nothing if the job does not exist.
func SetStatus(id string, s Status, dequeuedAt int64) Op {
	return Op{kind: opSetStatus, id: id, status: s, at: dequeuedAt}
}

// DeleteJob deletes a job and its error records.
func DeleteJob(id string) Op { return Op{kind: opDeleteJob, id: id} }

// AddError records a failure of a job, replacing a record of the same
// attempt. It does nothing if the job does not exist, so that no record
// outlives its job.
func AddError(r ErrorRecord) Op { return Op{kind: opAddError, id: r.JobID, rec: &r} }

// PutBudget inserts or replaces a budget's configuration by key.
func PutBudget(b Budget) Op { return Op{kind: opPutBudget, id: b.Key, budget: &b} }

// DeleteBudget deletes a budget's configuration.
func DeleteBudget(key string) Op { return Op{kind: opDeleteBudget, id: key} }

// DeleteEverything deletes every job, error record and budget (POST /reset).
func DeleteEverything() Op { return Op{kind: opDeleteEverything} }

// recoverInFlight returns every in-flight job to ready, storing the count.
func recoverInFlight(n *int64) Op { return Op{kind: opRecoverInFlight, count: n} }

// coalesce returns the ops of groups, in order, with work that cannot change
// the outcome of the transaction removed:
//
//   - An InsertJob followed by a DeleteJob of the same ID leaves no trace, so
//     both go, with every op on that ID between them (SetStatus and PutJob
//     are updates, AddError inserts only for an existing job: none of them
//     can fail or leave anything behind once the row is gone). The insert
//     becomes a probe that fails if the job already exists, because then
//     the insert would have failed the transaction.
//   - A SetStatus after an InsertJob or PutJob of the same ID, with nothing
//     between them that removes the row, is folded into a private copy of
//     that job: writing the row once with the final status is the same as
//     writing it and then updating it.
//
// DeleteEverything and RecoverInFlight touch every row, so nothing is
// coalesced across them. Ops before and after them are still coalesced.
func coalesce(groups []*Pending) []Op {
	n := 0
	for _, g := range groups {
		n += len(g.ops)
	}
	out := make([]Op, 0, n)
	if n <= 1 {
		for _, g := range groups {
			out = append(out, g.ops...)
		}
		return out
	}

	// rows: job ID -> index in out of the last InsertJob/PutJob writing its
	// row, while nothing after it has removed the row.
	rows := make(map[string]int)
	// open: job ID -> indices in out of its InsertJob and of every later
	// op on the same ID, while no DeleteJob has closed the insert.
	open := make(map[string][]int)

	for _, g := range groups {
		for _, op := range g.ops {
			k := len(out)
			switch op.kind {
			case opInsertJob:
				if _, dup := open[op.id]; dup {
					// The second insert fails the transaction: keep it,
					// and stop coalescing the first.
					delete(open, op.id)
				} else {
					open[op.id] = []int{k}
				}
				rows[op.id] = k
			case opPutJob:
				if idx, ok := open[op.id]; ok {
					open[op.id] = append(idx, k)
				}
				rows[op.id] = k
			case opUpdate:
				// A later SetStatus must apply after it, not fold into the
				// row written before it.
				delete(rows, op.id)
				if idx, ok := open[op.id]; ok {
					open[op.id] = append(idx, k)
				}
			case opSetStatus:
				if r, ok := rows[op.id]; ok {
					fold(&out[r], op)
					continue
				}
				if idx, ok := open[op.id]; ok {
					open[op.id] = append(idx, k)
				}
			case opAddError:
				if idx, ok := open[op.id]; ok {
					open[op.id] = append(idx, k)
				}
			case opDeleteJob:
				delete(rows, op.id)
				if idx, ok := open[op.id]; ok {
					delete(open, op.id)
					out[idx[0]].kind = opProbeNew
					for _, i := range idx[1:] {
						out[i].kind = opNone
					}
					continue
				}
			case opDeleteEverything, opRecoverInFlight:
				clear(rows)
				clear(open)
			}
			out = append(out, op)
		}
	}
	return out
}

// fold applies a SetStatus to the job row op writes, copying the job first
// so that the caller's value (and a retry of the groups on their own) never
// sees the change.
func fold(row *Op, set Op) {
	if !row.private {
		j := *row.job
		row.job = &j
		row.private = true
	}
	row.job.Status = set.status
	if set.at != 0 {
		row.job.DequeuedAt = set.at
	}
}
