// Package store defines zizq's durable record: the domain types (jobs, their
// error history, budget configurations, cron groups), the ops that change
// them and the sentinel errors. It knows nothing of HTTP, of dispatching or
// of any database: implementations live in subpackages (store/sqlite,
// store/postgres), and store/storetest is the suite every implementation
// passes. The engine keeps live state in memory and appends its changes, in
// order, as ops.
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Status is a job's lifecycle status.
type Status uint8

// Job statuses, in lifecycle order (the order used to sort status lists).
const (
	Scheduled Status = iota
	Ready
	InFlight
	Completed
	Dead
)

var statusNames = [...]string{"scheduled", "ready", "in_flight", "completed", "dead"}

// String returns the wire name of the status.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}

// ParseStatus maps a wire name to a Status.
func ParseStatus(name string) (Status, bool) {
	for i, n := range statusNames {
		if n == name {
			return Status(i), true
		}
	}
	return 0, false
}

// Live reports whether the job is unfinished (scheduled, ready or in flight).
func (s Status) Live() bool { return s <= InFlight }

// Job is the durable record of one job. Zero values of the optional
// timestamps (DequeuedAt, FailedAt, CompletedAt, PurgeAt) mean "unset".
// All timestamps are milliseconds since the Unix epoch.
type Job struct {
	ID          string
	Type        string
	Queue       string
	Priority    uint16
	Status      Status
	Payload     []byte // canonical JSON
	ReadyAt     int64
	Attempts    uint32
	RetryLimit  *uint32
	Backoff     *Backoff
	Retention   *Retention
	DequeuedAt  int64
	FailedAt    int64
	CompletedAt int64
	PurgeAt     int64
	Budgets     []Binding
	// Batch is a batched job's batch (nil: not batched): its key, and the
	// jq programs of the batch's first job, which rule the whole batch.
	Batch *BatchConfig
	// BatchOpen marks the pending job of its batch key: the one that later
	// enqueues with that key fold into. Dispatch closes it (CloseBatch).
	// The engine keeps at most one open live job per key.
	BatchOpen bool
	// UniqueKey ("" = none) and UniqueWhile never change once inserted.
	UniqueKey   string
	UniqueWhile UniqueWhile
	// FairTag is the fair-share tag (unix ms) of a job bound to a family's
	// sub-budget, given at enqueue; 0 for every other job (its tag is its
	// ID's time). It never changes once inserted.
	FairTag int64
	// StartBy is the job's deadline for waiting (unix ms, 0 = none): not
	// dispatched by then, it dies. ClearStartBy removes it.
	StartBy int64
}

// Plain reports whether j's overrides, timestamps (but ready_at), unique
// key, batch and start_by are all unset, as a new job's columns default
// to: most new jobs are, and a store writes them with fewer values.
func (j *Job) Plain() bool {
	return j.RetryLimit == nil && j.Backoff == nil && j.Retention == nil &&
		j.DequeuedAt == 0 && j.FailedAt == 0 && j.CompletedAt == 0 && j.PurgeAt == 0 &&
		j.UniqueKey == "" && j.Batch == nil && !j.BatchOpen && j.StartBy == 0
}

// BatchConfig is the batch of a batched job: enqueues with the same Key
// fold into its pending job while When holds, and Fold makes the merged
// payload (both jq programs, over $existing and $new).
type BatchConfig struct {
	Key  string
	When string
	Fold string
}

// UniqueWhile is the scope of a job's unique key: the statuses in which
// the job holding the key makes a new job with that key a duplicate.
type UniqueWhile uint8

// Unique scopes (docs/API.md §Unique jobs).
const (
	// UniqueQueued: while the holder is scheduled or ready (the default).
	UniqueQueued UniqueWhile = iota
	// UniqueActive: while it is scheduled, ready or in flight.
	UniqueActive
	// UniqueExists: until it is deleted or purged, finished or not.
	UniqueExists
)

var uniqueWhileNames = [...]string{"queued", "active", "exists"}

// String returns the wire name of the scope.
func (w UniqueWhile) String() string {
	if int(w) < len(uniqueWhileNames) {
		return uniqueWhileNames[w]
	}
	return "unknown"
}

// ParseUniqueWhile maps a wire name to a UniqueWhile.
func ParseUniqueWhile(name string) (UniqueWhile, bool) {
	for i, n := range uniqueWhileNames {
		if n == name {
			return UniqueWhile(i), true
		}
	}
	return 0, false
}

// Covers reports whether a job in status s is within scope w.
func (w UniqueWhile) Covers(s Status) bool {
	switch w {
	case UniqueQueued:
		return s == Scheduled || s == Ready
	case UniqueActive:
		return s.Live()
	}
	return true
}

// Backoff is a per-job retry backoff override.
type Backoff struct {
	Exponent float32
	BaseMs   uint32
	JitterMs uint32
}

// Retention is a per-job override of how long terminal jobs are kept.
type Retention struct {
	CompletedMs *uint64
	DeadMs      *uint64
}

// Binding ties a job to a budget with a materialised cost.
type Binding struct {
	Key  string
	Cost int64
}

// Strategy kinds of a budget.
const (
	WhileInFlight = "while_in_flight"
	TimeBased     = "time_based"
	Calendar      = "calendar"
)

// Budget is a budget's durable configuration. DurationMs and Burst are zero
// when unset (DurationMs is only set for time_based budgets).
type Budget struct {
	Key        string
	Allocation int64
	Strategy   string
	DurationMs int64
	Burst      int64
	CreatedAt  int64
	UpdatedAt  int64
	// PerKey makes the budget a family: a job bound to "<key>/<sub>" (no
	// plain budget of that key existing) is bound to the family and to the
	// sub-budget "<key>/<sub>", made from this template on first use and
	// never stored. nil: a plain budget.
	PerKey *BudgetTemplate
	// Paused: the budget pays nothing until resumed, or until PausedUntil
	// (unix ms) when that is set; PausedUntil alone pauses too. Neither is
	// set on a budget that is not paused.
	Paused      bool
	PausedUntil int64
	// SubPauses holds a family's paused sub-budgets, by sub-budget key
	// ("<family>/<sub>"): sub-budgets are not stored, but their pauses
	// must last, so they are stored with their family. nil when none.
	// Treat it as immutable: a change makes a new map.
	SubPauses map[string]Pause
	// Reset and Timezone are a calendar budget's: the cron expression of
	// the instants its pool refills, read in Timezone ("" is UTC). Both
	// "" for the other strategies.
	Reset    string
	Timezone string
	// Spent is what a calendar budget spent in its current period, as
	// SpendBudget last wrote it: not configuration, so PutBudget leaves it
	// as it is (a new budget starts with none). nil when none was written.
	Spent *Spent
	// Adaptive makes the budget back off when a worker reports that the
	// upstream refused (issue 26); nil when it does not.
	Adaptive *Adaptive
	// Keys holds a family's per-sub-key weights and allocations, by
	// sub-key (keys.go). nil when none. Treat it as immutable.
	Keys map[string]KeyOverride
}

// Adaptive is how a budget backs off: each refusal multiplies its
// effective rate (or allocation) by Decrease, never below Floor × the
// configured one, and with no refusal it climbs back to the configured
// one linearly over RecoverMs.
type Adaptive struct {
	Decrease  float64 `json:"decrease"`
	RecoverMs int64   `json:"recover_ms"`
	Floor     float64 `json:"floor"`
}

// EncodeAdaptive is the stored form of a budget's Adaptive, a JSON
// object; nil when it has none.
func EncodeAdaptive(a *Adaptive) *string {
	if a == nil {
		return nil
	}
	b, _ := json.Marshal(a) // numbers only: cannot fail
	s := string(b)
	return &s
}

// DecodeAdaptive reads what EncodeAdaptive wrote; nil reads as none.
func DecodeAdaptive(s *string) (*Adaptive, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	var a Adaptive
	if err := json.Unmarshal([]byte(*s), &a); err != nil {
		return nil, fmt.Errorf("decode adaptive: %w", err)
	}
	return &a, nil
}

// Spent is what a calendar budget spent in the period that ends at EndsAt
// (unix ms, its next reset when it was written): a restart that comes
// before EndsAt starts the budget with Used spent, a later one full.
type Spent struct {
	EndsAt int64
	Used   int64
}

// Equal reports whether two configurations are the same.
func (b Budget) Equal(o Budget) bool {
	return b.Key == o.Key && b.Allocation == o.Allocation && b.Strategy == o.Strategy &&
		b.DurationMs == o.DurationMs && b.Burst == o.Burst && b.CreatedAt == o.CreatedAt &&
		b.UpdatedAt == o.UpdatedAt && (b.PerKey == nil) == (o.PerKey == nil) &&
		(b.PerKey == nil || *b.PerKey == *o.PerKey) && b.Paused == o.Paused &&
		b.PausedUntil == o.PausedUntil && maps.Equal(b.SubPauses, o.SubPauses) &&
		b.Reset == o.Reset && b.Timezone == o.Timezone &&
		(b.Spent == nil) == (o.Spent == nil) && (b.Spent == nil || *b.Spent == *o.Spent) &&
		(b.Adaptive == nil) == (o.Adaptive == nil) && (b.Adaptive == nil || *b.Adaptive == *o.Adaptive) &&
		keysEqual(b.Keys, o.Keys)
}

// Pause is a sub-budget's pause: Paused and PausedUntil as a Budget's.
type Pause struct {
	Paused      bool  `json:"paused,omitempty"`
	PausedUntil int64 `json:"paused_until,omitempty"`
}

// EncodeSubPauses is the stored form of a family's SubPauses, a JSON
// object; nil when there are none.
func EncodeSubPauses(p map[string]Pause) *string {
	if len(p) == 0 {
		return nil
	}
	b, _ := json.Marshal(p) // strings, bools and integers: cannot fail
	s := string(b)
	return &s
}

// DecodeSubPauses reads what EncodeSubPauses wrote; nil reads as none.
func DecodeSubPauses(s *string) (map[string]Pause, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	var p map[string]Pause
	if err := json.Unmarshal([]byte(*s), &p); err != nil {
		return nil, fmt.Errorf("decode sub-budget pauses: %w", err)
	}
	if len(p) == 0 {
		return nil, nil
	}
	return p, nil
}

// BudgetTemplate is a family's configuration of its sub-budgets: a budget
// body without key, timestamps or further family.
type BudgetTemplate struct {
	Allocation int64
	Strategy   string
	DurationMs int64
	Burst      int64
}

// ErrorRecord is one recorded failure of a job.
type ErrorRecord struct {
	JobID      string
	Attempt    uint32
	Message    string
	ErrorType  string
	Backtrace  string
	DequeuedAt int64
	FailedAt   int64
}

// CommitMode says how durable a commit is before it is acknowledged.
type CommitMode uint8

const (
	// Buffered commits reach the operating system (for SQLite: the OS page
	// cache, synchronous=NORMAL in WAL mode): they survive a crash of the
	// process, not a power loss.
	Buffered CommitMode = iota
	// Fsync commits reach stable storage (for SQLite: synchronous=FULL):
	// they survive a power loss.
	Fsync
)

// ParseCommitMode maps "buffered" or "fsync" to a CommitMode.
func ParseCommitMode(s string) (CommitMode, error) {
	switch s {
	case "buffered":
		return Buffered, nil
	case "fsync":
		return Fsync, nil
	}
	return 0, errors.New(`commit mode must be "buffered" or "fsync"`)
}

// String returns the flag spelling of the mode.
func (m CommitMode) String() string {
	if m == Fsync {
		return "fsync"
	}
	return "buffered"
}

// ErrNotFound is returned when a job, error record or budget does not exist.
var ErrNotFound = errors.New("not found")

// ErrUnavailable is wrapped by writes that fail because storage cannot take
// them (a full disk, a read-only file system, failing I/O, a closed store);
// the message carries the reason ("storage unavailable: database or disk is
// full").
var ErrUnavailable = errors.New("storage unavailable")

// Range is an inclusive range of unsigned integers; nil bounds are open.
type Range struct {
	Lo, Hi *uint64
}

// Filter selects jobs for listing, counting and bulk changes. Empty slices
// and nil ranges do not filter. Jobs whose PurgeAt is set and not after Now
// are invisible, as if already purged.
type Filter struct {
	IDs        []string
	Queues     []string
	Types      []string
	Statuses   []Status
	BudgetKeys []string
	// SubBudgetsOf holds the budget families among BudgetKeys: a job bound
	// through one of their sub-budgets, by a key under "<family>/", is
	// selected too, unless that key is one of NotSubBudgets or under one
	// ("<key>/…"): budgets of their own that a family's name prefixes.
	SubBudgetsOf  []string
	NotSubBudgets []string
	Priority      *Range
	ReadyAt       *Range
	Attempts      *Range
	// Within, when set, narrows the selection to the jobs whose IDs it
	// holds; an empty set selects nothing. Unlike IDs it may be large (the
	// parked jobs of a live server, say): the store looks its IDs up by
	// primary key, a batch at a time, so the work follows the size of the
	// set, not of the table, and no query carries the whole set.
	Within *IDSet
	// Match, when set, is called with each candidate's canonical JSON
	// payload; only jobs for which it returns true are selected.
	Match func(payload []byte) bool
	Now   int64
}

// IDSet is a set of job IDs for Filter.Within. Build it with NewIDSet.
type IDSet struct {
	ids []string // ascending, without duplicates
}

// NewIDSet returns the set of ids. It sorts ids in place.
func NewIDSet(ids []string) *IDSet {
	slices.Sort(ids)
	return &IDSet{ids: slices.Compact(ids)}
}

// Len is the number of IDs in the set.
func (s *IDSet) Len() int { return len(s.ids) }

// IDs returns the set's IDs, ascending. The slice is the set's own: do not
// modify it.
func (s *IDSet) IDs() []string { return s.ids }

// After returns the IDs of the set that follow the exclusive cursor from
// ("" = from the start) in the given order, in that order.
func (s *IDSet) After(from string, order Order) []string {
	if order == Desc {
		end := len(s.ids)
		if from != "" {
			end, _ = slices.BinarySearch(s.ids, from)
		}
		out := slices.Clone(s.ids[:end])
		slices.Reverse(out)
		return out
	}
	start := 0
	if from != "" {
		var found bool
		start, found = slices.BinarySearch(s.ids, from)
		if found {
			start++
		}
	}
	return s.ids[start:]
}

// Order of a listing by job ID.
type Order uint8

const (
	Asc Order = iota
	Desc
)
