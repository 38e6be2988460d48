// Package api defines the Zizq wire types shared by the server, the client and
// the dashboard. Field order and omission rules follow the Zizq 0.6.1 wire
// format (see docs/API.md §The job object) so that official clients can decode
// them unchanged.
package api

// Job statuses as they appear on the wire.
const (
	StatusScheduled = "scheduled"
	StatusReady     = "ready"
	StatusInFlight  = "in_flight"
	StatusCompleted = "completed"
	StatusDead      = "dead"
)

// Unique key scopes (unique_while), docs/API.md §Unique jobs.
const (
	UniqueWhileQueued = "queued" // the default
	UniqueWhileActive = "active"
	UniqueWhileExists = "exists"
)

// Budget strategy types.
const (
	StrategyWhileInFlight = "while_in_flight"
	StrategyTimeBased     = "time_based"
	StrategyCalendar      = "calendar"
)

// DefaultPriority is the priority of a job enqueued without one.
const DefaultPriority = 32768

// Job is a job as rendered in responses and on the take stream.
type Job struct {
	ID          string     `json:"id"`
	Type        string     `json:"type"`
	Queue       string     `json:"queue"`
	Priority    uint16     `json:"priority"`
	Status      string     `json:"status"`
	Payload     Payload    `json:"payload,omitempty"`
	ReadyAt     uint64     `json:"ready_at"`
	Attempts    uint32     `json:"attempts"`
	RetryLimit  *uint32    `json:"retry_limit,omitempty"`
	Backoff     *Backoff   `json:"backoff,omitempty"`
	DequeuedAt  uint64     `json:"dequeued_at,omitempty"`
	FailedAt    uint64     `json:"failed_at,omitempty"`
	Retention   *Retention `json:"retention,omitempty"`
	PurgeAt     uint64     `json:"purge_at,omitempty"`
	CompletedAt uint64     `json:"completed_at,omitempty"`
	UniqueKey   string     `json:"unique_key,omitempty"`
	UniqueWhile string     `json:"unique_while,omitempty"` // materialised when UniqueKey is set
	Duplicate   *bool      `json:"duplicate,omitempty"`
	Folded      *bool      `json:"folded,omitempty"`
	Batch       *Batch     `json:"batch,omitempty"`
	Budgets     []Binding  `json:"budgets,omitempty"`
	// StartBy is the job's deadline for waiting (our extension, issue 26;
	// docs/API.md §Deadlines): not dispatched by then, it dies.
	StartBy uint64 `json:"start_by,omitempty"`
}

// Batch is a batched job's batch: its key, and the jq programs of the
// batch's first job, which rule the whole batch.
type Batch struct {
	Key  string `json:"key"`
	When string `json:"when"`
	Fold string `json:"fold"`
}

// Backoff overrides the server's retry backoff for one job.
type Backoff struct {
	Exponent float32 `json:"exponent"`
	BaseMs   uint32  `json:"base_ms"`
	JitterMs uint32  `json:"jitter_ms"`
}

// Retention overrides how long terminal jobs are kept, in milliseconds.
type Retention struct {
	CompletedMs *uint64 `json:"completed_ms,omitempty"`
	DeadMs      *uint64 `json:"dead_ms,omitempty"`
}

// Binding ties a job to a budget with a cost, as echoed in job responses.
type Binding struct {
	Key  string `json:"key"`
	Cost int64  `json:"cost"`
}

// ErrorRecord is one recorded failure of a job.
type ErrorRecord struct {
	Attempt    uint32 `json:"attempt"`
	Message    string `json:"message"`
	ErrorType  string `json:"error_type,omitempty"`
	Backtrace  string `json:"backtrace,omitempty"`
	DequeuedAt uint64 `json:"dequeued_at"`
	FailedAt   uint64 `json:"failed_at"`
}

// Pages holds the cursor links of a paginated listing. Next and Prev are
// always present and null when there is no such page.
type Pages struct {
	Self string  `json:"self"`
	Next *string `json:"next"`
	Prev *string `json:"prev"`
}

// JobList is the body of GET /jobs.
type JobList struct {
	Jobs  []Job `json:"jobs"`
	Pages Pages `json:"pages"`
}

// ErrorList is the body of GET /jobs/{id}/errors.
type ErrorList struct {
	Errors []ErrorRecord `json:"errors"`
	Pages  Pages         `json:"pages"`
}

// BulkJobs is the body of POST /jobs/bulk responses.
type BulkJobs struct {
	Jobs []Job `json:"jobs"`
}

// Count is the body of GET /jobs/count.
type Count struct {
	Count int64 `json:"count"`
}

// Deleted is the body of DELETE /jobs.
type Deleted struct {
	Deleted int64 `json:"deleted"`
}

// Patched is the body of PATCH /jobs.
type Patched struct {
	Patched int64 `json:"patched"`
}

// Queues is the body of GET /queues.
type Queues struct {
	Queues []string `json:"queues"`
}

// Health is the body of GET /health.
type Health struct {
	Status string `json:"status"`
}

// Version is the body of GET /version.
type Version struct {
	Version string `json:"version"`
}

// Error is the body of every error response.
type Error struct {
	Error     string   `json:"error"`
	Supported []string `json:"supported,omitempty"`
}

// NotFound is the body of a 422 from POST /jobs/success.
type NotFound struct {
	NotFound []string `json:"not_found"`
}

// AckIDs is the body of POST /jobs/success.
type AckIDs struct {
	IDs []string `json:"ids"`
	// Budgets settles the real costs of some of them (issue 25, our
	// extension): by job ID, as the body of POST /jobs/{id}/success.
	Budgets map[string][]Settle `json:"budgets,omitempty"`
}

// Budget is a budget as rendered in responses. State is only present when the
// caller asked for live figures (?state=true). PerKey, Paused and PausedUntil
// are our extension (issue 16), each left out unless set, so a budget without
// them has Zizq's exact shape (docs/API.md §The budget object).
type Budget struct {
	Key        string   `json:"key"`
	Allocation int64    `json:"allocation"`
	Strategy   Strategy `json:"strategy"`
	// PerKey makes the budget a family: a job bound to "<key>/<sub>" (no
	// plain budget of that key existing) is bound to the family and to the
	// sub-budget "<key>/<sub>", made from this template at first use.
	PerKey *BudgetTemplate `json:"per_key,omitempty"`
	// Keys are a family's per-sub-key overrides (issue 26, keys.go);
	// Weight is a sub-budget's weight, 1 when its key has none.
	Keys   KeyOverrides `json:"keys,omitempty"`
	Weight int64        `json:"weight,omitempty"`
	// Paused: the budget pays nothing until resumed, or until PausedUntil
	// (unix ms) when that is set; PausedUntil alone pauses too.
	Paused      bool   `json:"paused,omitempty"`
	PausedUntil uint64 `json:"paused_until,omitempty"`
	CreatedAt   uint64 `json:"created_at"`
	UpdatedAt   uint64 `json:"updated_at"`
	// Adaptive is the budget's back-off (issue 26; left out when none).
	Adaptive *Adaptive    `json:"adaptive,omitempty" msgpack:"adaptive,omitempty"`
	State    *BudgetState `json:"state,omitempty"`
}

// BudgetTemplate is a family's configuration of its sub-budgets: the shape
// of a budget body (our extension).
type BudgetTemplate struct {
	Allocation int64    `json:"allocation"`
	Strategy   Strategy `json:"strategy"`
}

// Strategy describes how a budget's tokens come back.
type Strategy struct {
	Type       string `json:"type"`
	DurationMs int64  `json:"duration_ms,omitempty"`
	Burst      int64  `json:"burst,omitempty"`
	// Reset and Timezone are a calendar budget's (our extension): the
	// cron expression of the instants its pool refills to the allocation,
	// read in Timezone (an IANA name; "" is UTC).
	Reset    string `json:"reset,omitempty"`
	Timezone string `json:"timezone,omitempty"`
}

// BudgetList is the body of GET /budgets.
type BudgetList struct {
	Budgets []Budget `json:"budgets"`
}

// BudgetState holds the live figures of a budget (our extension, docs/API.md
// §Live budget state).
type BudgetState struct {
	Available      float64 `json:"available"`
	Capacity       int64   `json:"capacity"`
	InFlight       int64   `json:"in_flight"`
	Held           int64   `json:"held"`
	Parked         int64   `json:"parked"`
	OldestParkedMs *int64  `json:"oldest_parked_ms"`
	NextTokenAt    *int64  `json:"next_token_at"`
	Dispatched     int64   `json:"dispatched"`
	// SubBudgets counts a family's live sub-budgets; it is left out for
	// every other budget.
	SubBudgets *int64 `json:"sub_budgets,omitempty"`

	// Settling (issue 25, our extension; each left out when it does not
	// apply). Debt is what a time_based or calendar budget owes, in
	// tokens, while Available is below zero; RepaidAt (unix ms) is when
	// the drip will have repaid it (a calendar budget: its next reset).
	Debt     *float64 `json:"debt,omitempty"`
	RepaidAt *int64   `json:"repaid_at,omitempty"`
	// Settled counts the settles since the server started; CostRatio is
	// the mean of actual ÷ estimate over about the last 100 of them.
	Settled   *Settled `json:"settled,omitempty"`
	CostRatio *float64 `json:"cost_ratio,omitempty"`
	// Used is what a calendar budget spent in the current period and
	// NextResetAt (unix ms) when the period ends.
	Used        *int64 `json:"used,omitempty"`
	NextResetAt *int64 `json:"next_reset_at,omitempty"`

	// Backing off (issue 26, our extension; left out for a budget that
	// is not adaptive and was never throttled). EffectiveAllocation is
	// the allocation it pays at now (per its duration, for time_based);
	// ThrottledUntil (unix ms) is when a refusal's retry_after ends, while
	// it pays nothing; Throttles counts the refusals since the start.
	EffectiveAllocation *float64 `json:"effective_allocation,omitempty"`
	ThrottledUntil      *int64   `json:"throttled_until,omitempty"`
	Throttles           *int64   `json:"throttles,omitempty"`
	// Expired counts the jobs that died of their start_by while the
	// budget refused them, since the server started (issue 26; left out
	// before the first).
	Expired int64 `json:"expired,omitempty"`
}

// Settled counts a budget's settles: how many, and the tokens credited back
// (actual below the estimate) and debited (actual above it).
type Settled struct {
	Count    int64 `json:"count"`
	Credited int64 `json:"credited"`
	Debited  int64 `json:"debited"`
}

// Forecast is the body of GET /budgets/{key}/forecast (our extension):
// when the budget's backlog will have been dispatched at today's pace, or
// at the pace of the what-if the query asked for.
type Forecast struct {
	Key string `json:"key"`
	// Parked counts the backlog: every unfinished ready job bound to the
	// budget, waiting for it or for another budget, served or not.
	Parked int64 `json:"parked"`
	// DrainsAt is when the last of them is dispatched (unix ms): exact
	// for a time_based budget whose jobs are bound to it alone and have a
	// taker with room; from the observed mean time in flight for
	// while_in_flight (Estimated), null until there is an observation;
	// from paused_until for a paused budget, null while paused without end.
	DrainsAt  *int64 `json:"drains_at"`
	Estimated bool   `json:"estimated"`
	// Unknown says why DrainsAt is null: "paused without an end", "no job
	// of it has finished yet: …", "jobs run longer than observed" (every
	// token is held by a job in flight for longer than the mean). Omitted
	// when DrainsAt is set.
	Unknown string `json:"unknown,omitempty" msgpack:"unknown,omitempty"`
	// Resets is, for a calendar budget whose backlog outlasts its current
	// period, how many resets from now it takes: DrainsAt is then the
	// instant of the reset that pays its last job (our extension, issue
	// 25; left out when the current period pays it, and for the others).
	Resets int64 `json:"resets,omitempty" msgpack:"resets,omitempty"`
	// BackingOff: the budget is backing off after a refusal, and the
	// forecast is at its effective rate, which climbs back meanwhile: the
	// backlog may well drain sooner (issue 26).
	BackingOff bool `json:"backing_off,omitempty" msgpack:"backing_off,omitempty"`
	// WhatIf echoes the query's what-if: the forecast is for the budget so
	// changed, not as it is. Omitted for a plain forecast.
	WhatIf *ForecastWhatIf `json:"what_if,omitempty" msgpack:"what_if,omitempty"`
}

// ForecastWhatIf is the what-if a forecast answered for: the values the
// query changed.
type ForecastWhatIf struct {
	Allocation *int64 `json:"allocation,omitempty" msgpack:"allocation,omitempty"`
	DurationMs *int64 `json:"duration_ms,omitempty" msgpack:"duration_ms,omitempty"`
	Burst      *int64 `json:"burst,omitempty" msgpack:"burst,omitempty"`
}

// Why explains what a job waits for (GET /jobs/{id}/why).
type Why struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	WaitingFor string `json:"waiting_for"`
	// Reason says in words what a job waiting for a worker waits for: no
	// worker serves its queue, or every worker of it is busy (omitted
	// otherwise).
	Reason  string      `json:"reason,omitempty" msgpack:"reason,omitempty"`
	Budgets []WhyBudget `json:"budgets"`
	ReadyAt uint64      `json:"ready_at"`
	// ExpectedAt is when the job is expected to be dispatched (unix ms),
	// from its place in the lines of its time_based budgets at their
	// rates, if nothing else takes their tokens; null when no such
	// estimate holds (a while_in_flight budget or a pause without end
	// holds it back, or it is not waiting).
	ExpectedAt *int64 `json:"expected_at"`
}

// WhyBudget is one budget in whose line a parked job waits.
type WhyBudget struct {
	Key          string  `json:"key"`
	Cost         int64   `json:"cost"`
	Available    float64 `json:"available"`
	Ahead        int64   `json:"ahead"`
	AffordableAt *int64  `json:"affordable_at"`
	// ReservedBy names the head of the budget's line whose reservation
	// alone holds the job back: the budget could pay it otherwise.
	ReservedBy string `json:"reserved_by,omitempty" msgpack:"reserved_by,omitempty"`
	// Paused: the budget is paused, until PausedUntil (unix ms) when that
	// is set (our extension, issue 16; left out unless paused).
	Paused      bool   `json:"paused,omitempty" msgpack:"paused,omitempty"`
	PausedUntil *int64 `json:"paused_until,omitempty" msgpack:"paused_until,omitempty"`
	// Debt is what the budget owes after settles of real costs, repaid at
	// RepaidAt (unix ms): it pays nothing until then (our extension,
	// issue 25; left out unless in debt).
	Debt     *float64 `json:"debt,omitempty" msgpack:"debt,omitempty"`
	RepaidAt *int64   `json:"repaid_at,omitempty" msgpack:"repaid_at,omitempty"`
	// RefusedAt (unix ms) is the last refusal a backing-off budget counted
	// and Effective its effective allocation (issue 26; left out unless it
	// backs off); ThrottledUntil is when its retry_after ends.
	RefusedAt      *int64   `json:"refused_at,omitempty" msgpack:"refused_at,omitempty"`
	Effective      *float64 `json:"effective_allocation,omitempty" msgpack:"effective_allocation,omitempty"`
	ThrottledUntil *int64   `json:"throttled_until,omitempty" msgpack:"throttled_until,omitempty"`
}

// Why.WaitingFor values.
const (
	WaitingSchedule = "schedule"
	WaitingBudget   = "budget"
	WaitingWorker   = "worker"
	WaitingNothing  = "nothing"
	WaitingFinished = "finished"
)

// Stats is the body of GET /stats.
type Stats struct {
	// Role is "leader" or "follower" (our extension): every SQLite server
	// leads; in a cluster on PostgreSQL one server does, and Leader is the
	// URL it is reached at, Term its lease's term.
	Role   string `json:"role"`
	Leader string `json:"leader,omitempty"`
	Term   int64  `json:"term,omitempty"`
	// Node is the URL of the server of a cluster that answered (a
	// follower forwards the leader's figures); TermMs how long the leader
	// has led its term (our extensions).
	Node     string       `json:"node,omitempty"`
	TermMs   int64        `json:"term_ms,omitempty"`
	Version  string       `json:"version"`
	UptimeMs int64        `json:"uptime_ms"` // since the process started
	RSSBytes int64        `json:"rss_bytes"`
	DBBytes  int64        `json:"db_bytes"`  // size of the database file (our extension)
	WALBytes int64        `json:"wal_bytes"` // size of its write-ahead log (our extension)
	Jobs     JobCounts    `json:"jobs"`
	Queues   []QueueStats `json:"queues"`
	Budgets  []Budget     `json:"budgets"`
	Crons    []CronStats  `json:"crons"` // cron groups by name (our extension)
}

// JobCounts counts live jobs by state. Ready excludes parked jobs.
type JobCounts struct {
	Scheduled int64 `json:"scheduled"`
	Ready     int64 `json:"ready"`
	Parked    int64 `json:"parked"`
	InFlight  int64 `json:"in_flight"`
}

// QueueStats counts the live jobs of one queue.
type QueueStats struct {
	Name      string `json:"name"`
	Scheduled int64  `json:"scheduled"`
	Ready     int64  `json:"ready"`
	Parked    int64  `json:"parked"`
	InFlight  int64  `json:"in_flight"`
}

// BindingChange is the body of the bulk binding endpoints' responses.
type BindingChange struct {
	Changed int64    `json:"changed"`
	Blocked []string `json:"blocked"`
}
