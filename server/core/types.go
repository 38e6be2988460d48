package core

import (
	"time"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// The core's vocabulary: what the transports hand the core and what it
// answers. These are the core's own types, not the engine's, so that a
// change inside the engine stops here; the conversions below are the
// boundary. Most are field-for-field copies of an engine type, converted
// with a struct conversion (no allocation).

// EngineConfig is the engine's server-wide configuration, passed through
// the core from the command line to the engine.
type EngineConfig = engine.Config

// DefaultEngineConfig returns the engine's defaults.
func DefaultEngineConfig() EngineConfig { return engine.DefaultConfig() }

// BindingSpec is a requested budget binding. CreateWith, when set, is the
// budget to create (atomically with the job) if the key does not exist.
type BindingSpec struct {
	Key        string
	Cost       int64
	CreateWith *store.Budget
}

// NewJob is a validated enqueue request. ReadyAt nil means now.
type NewJob struct {
	Type       string
	Queue      string
	Priority   uint16
	Payload    []byte
	ReadyAt    *int64
	RetryLimit *uint32
	Backoff    *store.Backoff
	Retention  *store.Retention
	Budgets    []BindingSpec
	// UniqueKey ("" = none) and its scope: the job is not created while
	// another job holding the key is in that scope.
	UniqueKey   string
	UniqueWhile store.UniqueWhile
	// Batch is the job's batch (whether the job opens its key's pending
	// job is the core's decision, made at each enqueue).
	Batch *store.BatchConfig
	// StartBy (unix ms) or StartWithinMs (from the enqueue) is the job's
	// deadline for waiting: 0 for none; at most one is set.
	StartBy       int64
	StartWithinMs int64
}

// Enqueued is the outcome of one request of an enqueue: the new job; or,
// when another job holds its unique key, that job (Duplicate); or, when the
// request folded into the pending job of its batch, that job (Folded).
type Enqueued struct {
	store.Job
	Duplicate bool
	Folded    bool
}

// Failure is a worker's report that a job failed.
type Failure struct {
	Message   string
	ErrorType string
	Backtrace string
	RetryAt   *int64
	Kill      bool
	// Budgets settles the job's real costs before it fails.
	Budgets []Settle
	// Throttle reports that the upstream refused it: the budget backs
	// off, and the failure does not count toward the retry limit unless
	// Count.
	Throttle *FailThrottle
}

// FailThrottle is the refusal a failure reports for one of the job's
// budgets.
type FailThrottle = engine.FailThrottle

// Refusal is a worker's report that the upstream refused.
type Refusal = engine.Refusal

// Settle is a finished job's actual cost to one of its time_based or
// calendar budgets: the cost bound at dispatch was the estimate, and the
// difference is credited back or debited when the job finishes.
type Settle = engine.Settle

// PutMode says whether PutBudget may replace an existing budget.
type PutMode uint8

const (
	// CreateOnly refuses an existing key.
	CreateOnly PutMode = iota
	// CreateOrReplace replaces an existing budget, keeping its created_at.
	CreateOrReplace
)

// BudgetView is a budget with, when asked, its live figures.
type BudgetView struct {
	Budget store.Budget
	State  *BudgetState
	// Weight is a sub-budget's share of its family's turns; 0 for every
	// other budget.
	Weight int64
}

// BudgetState holds a budget's live figures (the engine's: its fields are
// documented there).
type BudgetState = engine.BudgetState

// WhatIf is a configuration to forecast with instead of the budget's own;
// nil fields keep the budget's.
type WhatIf struct {
	Allocation *int64
	DurationMs *int64
	Burst      *int64
}

// Forecast is when a budget's current backlog will have been dispatched at
// today's pace (the engine's: its fields are documented there).
type Forecast = engine.Forecast

// Counts are live job counts; Ready excludes parked jobs.
type Counts struct {
	Scheduled, Ready, Parked, InFlight int64
}

// QueueCounts are the live counts of one queue.
type QueueCounts struct {
	Name string
	Counts
}

// Stats are the live counts and every budget with its live figures.
type Stats struct {
	Started time.Time
	Jobs    Counts
	Queues  []QueueCounts // the queues holding live jobs, by name
	Budgets []BudgetView
}

// WhyBudget is one budget in whose line a parked job waits (the engine's).
type WhyBudget = engine.WhyBudget

// List names one of the lists a dashboard shows.
type List uint8

const (
	// ListReady holds the waiting jobs, ready or parked, in dispatch order.
	ListReady = List(engine.ListReady)
	// ListInFlight holds the jobs in flight, by dequeued_at.
	ListInFlight = List(engine.ListInFlight)
	// ListScheduled holds the scheduled jobs, by ready_at.
	ListScheduled = List(engine.ListScheduled)
	// NumLists is the number of lists.
	NumLists = int(engine.NumLists)
)

// AnchorKind says where a window is.
type AnchorKind uint8

const (
	// AnchorHead: the first jobs of the list.
	AnchorHead = AnchorKind(engine.AnchorHead)
	// AnchorTail: the last jobs.
	AnchorTail = AnchorKind(engine.AnchorTail)
	// AnchorOffset: from a position (clamped so the window stays full).
	AnchorOffset = AnchorKind(engine.AnchorOffset)
	// AnchorAround: centred on a job; Fallback says what to show when it
	// is not in the list.
	AnchorAround = AnchorKind(engine.AnchorAround)
	// AnchorNowhere, as a fallback: an empty window.
	AnchorNowhere = AnchorKind(engine.AnchorNowhere)
)

// Anchor places a window.
type Anchor struct {
	Kind     AnchorKind
	Offset   int
	ID       string
	Fallback AnchorKind // AnchorHead, AnchorTail or AnchorNowhere
}

// Window is a part of a list.
type Window struct {
	Jobs  []store.Job
	First int // position of Jobs[0] (0 when empty)
	Total int // jobs in the list
	// Resolved is the anchor's job when an AnchorAround found it.
	Resolved string
}

// Direction of a find.
type Direction uint8

const (
	// Forward: the first match after the anchor.
	Forward = Direction(engine.Forward)
	// Backward: the first match before the anchor, going back.
	Backward = Direction(engine.Backward)
	// Locate: the anchor's own position; the query is not looked at.
	Locate = Direction(engine.Locate)
)

// FindRequest is a search of a list, like less's /, n and N.
type FindRequest struct {
	List List
	// ID anchors the search at a job; "" starts at the start (Forward) or
	// the end (Backward). An anchor not in the list does too (Locate finds
	// nothing).
	ID        string
	Direction Direction
	// Queues and Types match by substring: any value of a field, every
	// field given.
	Queues, Types []string
	Limit         int
}

// RebindResult is the outcome of RebindJobs.
type RebindResult struct {
	Jobs    []store.Job // the changed jobs, as they are now
	Changed int64
	Blocked []string // in-flight jobs left unchanged
}

// engineJobs converts an enqueue's requests, their bindings in one slice
// for the whole call.
func engineJobs(specs []NewJob) []engine.NewJob {
	n := 0
	for i := range specs {
		n += len(specs[i].Budgets)
	}
	bindings := make([]engine.BindingSpec, 0, n)
	out := make([]engine.NewJob, len(specs))
	for i := range specs {
		start := len(bindings)
		for _, b := range specs[i].Budgets {
			bindings = append(bindings, engine.BindingSpec(b))
		}
		out[i] = engineJob(specs[i], bindings[start:len(bindings):len(bindings)])
	}
	return out
}

// engineJob is sp with the bindings given (already converted).
func engineJob(sp NewJob, bindings []engine.BindingSpec) engine.NewJob {
	if len(bindings) == 0 {
		bindings = nil
	}
	return engine.NewJob{
		Type: sp.Type, Queue: sp.Queue, Priority: sp.Priority, Payload: sp.Payload, ReadyAt: sp.ReadyAt,
		RetryLimit: sp.RetryLimit, Backoff: sp.Backoff, Retention: sp.Retention, Budgets: bindings,
		UniqueKey: sp.UniqueKey, UniqueWhile: sp.UniqueWhile, Batch: sp.Batch,
		StartBy: sp.StartBy, StartWithinMs: sp.StartWithinMs,
	}
}

func engineBindings(in []BindingSpec) []engine.BindingSpec {
	if in == nil {
		return nil
	}
	out := make([]engine.BindingSpec, len(in))
	for i, b := range in {
		out[i] = engine.BindingSpec(b)
	}
	return out
}

func coreBindings(in []engine.BindingSpec) []BindingSpec {
	if in == nil {
		return nil
	}
	out := make([]BindingSpec, len(in))
	for i, b := range in {
		out[i] = BindingSpec(b)
	}
	return out
}

func coreJob(j engine.NewJob) NewJob {
	return NewJob{
		Type: j.Type, Queue: j.Queue, Priority: j.Priority, Payload: j.Payload, ReadyAt: j.ReadyAt,
		RetryLimit: j.RetryLimit, Backoff: j.Backoff, Retention: j.Retention, Budgets: coreBindings(j.Budgets),
		UniqueKey: j.UniqueKey, UniqueWhile: j.UniqueWhile, Batch: j.Batch,
		StartBy: j.StartBy, StartWithinMs: j.StartWithinMs,
	}
}

func coreEnqueued(in []engine.Enqueued) []Enqueued {
	if in == nil {
		return nil
	}
	out := make([]Enqueued, len(in))
	for i := range in {
		out[i] = Enqueued(in[i])
	}
	return out
}

func enginePutMode(m PutMode) engine.PutMode {
	if m == CreateOrReplace {
		return engine.CreateOrReplace
	}
	return engine.CreateOnly
}

func coreBudgetView(v engine.BudgetView) BudgetView {
	return BudgetView{Budget: v.Budget, State: v.State, Weight: v.Weight}
}

func coreBudgetViews(in []engine.BudgetView) []BudgetView {
	if in == nil {
		return nil
	}
	out := make([]BudgetView, len(in))
	for i, v := range in {
		out[i] = coreBudgetView(v)
	}
	return out
}

func coreStats(st engine.Stats) Stats {
	out := Stats{Started: st.Started, Jobs: Counts(st.Jobs), Budgets: coreBudgetViews(st.Budgets)}
	if st.Queues != nil {
		out.Queues = make([]QueueCounts, len(st.Queues))
		for i, q := range st.Queues {
			out.Queues[i] = QueueCounts{Name: q.Name, Counts: Counts(q.Counts)}
		}
	}
	return out
}

func engineAnchor(a Anchor) engine.Anchor {
	return engine.Anchor{Kind: engine.AnchorKind(a.Kind), Offset: a.Offset, ID: a.ID, Fallback: engine.AnchorKind(a.Fallback)}
}

func engineFind(f FindRequest) engine.FindRequest {
	return engine.FindRequest{List: engine.List(f.List), ID: f.ID, Direction: engine.Direction(f.Direction),
		Queues: f.Queues, Types: f.Types, Limit: f.Limit}
}

func coreWindows(ws [engine.NumLists]engine.Window) [NumLists]Window {
	var out [NumLists]Window
	for l := range ws {
		out[l] = Window(ws[l])
	}
	return out
}
