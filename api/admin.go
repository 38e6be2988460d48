package api

import (
	"encoding/json"
	"strconv"
)

// The admin port's event stream (GET /events, a WebSocket of JSON text frames;
// docs/API.md §The event stream). Every server frame is an AdminFrame; which
// of its fields are set depends on Event. Budget frames are our extension.

// Event kinds of server frames.
const (
	EventHeartbeat      = "heartbeat"
	EventJobSnapshot    = "job_snapshot"
	EventJobChanged     = "job_changed"
	EventFindResult     = "find_result"
	EventBudgetSnapshot = "budget_snapshot"
	EventBudgetChanged  = "budget_changed"
	EventBudgetRemoved  = "budget_removed"
)

// Statuses of job_changed.
const (
	ChangeReady            = "ready"
	ChangeReadyRemoved     = "ready_removed"
	ChangeInFlight         = "in_flight"
	ChangeInFlightRemoved  = "in_flight_removed"
	ChangeScheduled        = "scheduled"
	ChangeScheduledRemoved = "scheduled_removed"
	ChangeCompleted        = "completed"
	ChangeDead             = "dead"
)

// List names of subscribe and find.
const (
	ListReady     = "ready"
	ListInFlight  = "in_flight"
	ListScheduled = "scheduled"
)

// ServerStatus is sent with every frame.
type ServerStatus struct {
	Version        string `json:"version"`
	UptimeMs       uint64 `json:"uptime_ms"`
	Tier           string `json:"tier"`
	TotalReady     int    `json:"total_ready"`
	TotalInFlight  int    `json:"total_in_flight"`
	TotalScheduled int    `json:"total_scheduled"`
	// SubscriptionLimit caps every window (Zizq's free tier); never set
	// by this server.
	SubscriptionLimit *int `json:"subscription_limit,omitempty"`
}

// AdminFrame is one server frame.
type AdminFrame struct {
	Server ServerStatus `json:"server"`
	Event  string       `json:"event"`
	// job_snapshot.
	Ready     *JobWindow `json:"ready,omitempty"`
	InFlight  *JobWindow `json:"in_flight,omitempty"`
	Scheduled *JobWindow `json:"scheduled,omitempty"`
	// job_changed: the job, for additions.
	ID     string    `json:"id,omitempty"`
	Status string    `json:"status,omitempty"`
	Job    *AdminJob `json:"job,omitempty"`
	// find_result.
	List            string     `json:"list,omitempty"`
	MatchedPosition *FindMatch `json:"matched_position,omitempty"`
	Window          *JobWindow `json:"window,omitempty"`
	// budget_snapshot (every budget), budget_changed (one), budget_removed
	// (Key).
	Budgets []Budget `json:"budgets,omitempty"`
	Budget  *Budget  `json:"budget,omitempty"`
	Key     string   `json:"key,omitempty"`
}

// FindMatch is a find_result's matched_position: a number, or null when
// nothing matched (a nil *FindMatch once decoded).
type FindMatch struct {
	Position int
	Found    bool
}

// MarshalJSON writes the position, or null.
func (m FindMatch) MarshalJSON() ([]byte, error) {
	if !m.Found {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, int64(m.Position), 10), nil
}

// UnmarshalJSON reads a number or null.
func (m *FindMatch) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = FindMatch{}
		return nil
	}
	m.Found = true
	return json.Unmarshal(b, &m.Position)
}

// JobWindow is a part of a list: items from first_position on, of total.
type JobWindow struct {
	Items         []AdminJob `json:"items"`
	FirstPosition int        `json:"first_position"`
	Total         int        `json:"total"`
	// ResolvedAnchor is the job an "around" anchor found (absent: not
	// found, the fallback applied).
	ResolvedAnchor string `json:"resolved_anchor,omitempty"`
}

// AdminJob is a job as the event stream shows it. Payload, RetryLimit,
// Backoff, Retention and the unique fields come in detail mode only;
// Budgets (our extension) always.
type AdminJob struct {
	ID          string          `json:"id"`
	Queue       string          `json:"queue"`
	JobType     string          `json:"job_type"`
	Priority    uint16          `json:"priority"`
	ReadyAt     int64           `json:"ready_at"`
	Attempts    uint32          `json:"attempts"`
	DequeuedAt  int64           `json:"dequeued_at,omitempty"`
	FailedAt    int64           `json:"failed_at,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	RetryLimit  *uint32         `json:"retry_limit,omitempty"`
	Backoff     *AdminBackoff   `json:"backoff,omitempty"`
	Retention   *AdminRetention `json:"retention,omitempty"`
	UniqueKey   string          `json:"unique_key,omitempty"`
	UniqueWhile string          `json:"unique_while,omitempty"`
	Budgets     []Binding       `json:"budgets,omitempty"`
}

// AdminBackoff is a job's backoff override.
type AdminBackoff struct {
	BaseMs   uint32  `json:"base_ms"`
	Exponent float32 `json:"exponent"`
	JitterMs uint32  `json:"jitter_ms"`
}

// AdminRetention is a job's retention override.
type AdminRetention struct {
	CompletedMs *uint64 `json:"completed_ms,omitempty"`
	DeadMs      *uint64 `json:"dead_ms,omitempty"`
}

// Client frames ("type"), snake_case as Zizq's.
const (
	ClientSubscribe      = "subscribe"
	ClientSetDetailLevel = "set_detail_level"
	ClientDeleteJob      = "delete_job"
	ClientFind           = "find"
)

// Anchor kinds of subscribe and find.
const (
	AnchorHead   = "head"
	AnchorTail   = "tail"
	AnchorOffset = "offset"
	AnchorAround = "around"
	// Fallbacks of "around".
	FallbackHead    = "head"
	FallbackTail    = "tail"
	FallbackNowhere = "nowhere"
	// Find anchors.
	FindJobID = "job_id"
	FindStart = "start"
	FindEnd   = "end"
	// Find directions.
	DirectionForward  = "forward"
	DirectionBackward = "backward"
	DirectionLocate   = "locate"
)

// ClientFrame is one client frame; which fields matter depends on Type.
type ClientFrame struct {
	Type string `json:"type"`
	// subscribe and find.
	List   string        `json:"list,omitempty"`
	Anchor *ClientAnchor `json:"anchor,omitempty"`
	Limit  *int          `json:"limit,omitempty"`
	// set_detail_level.
	Detail *bool `json:"detail,omitempty"`
	// delete_job.
	ID string `json:"id,omitempty"`
	// find.
	Direction string       `json:"direction,omitempty"`
	Query     *SearchQuery `json:"query,omitempty"`
}

// ClientAnchor is the anchor of subscribe (head, tail, offset, around) or
// find (job_id, start, end).
type ClientAnchor struct {
	Kind     string `json:"kind"`
	Offset   *int   `json:"offset,omitempty"`
	ID       string `json:"id,omitempty"`
	Fallback string `json:"fallback,omitempty"`
}

// SearchQuery is find's predicate: substrings of the queue and the type.
type SearchQuery struct {
	Queues []string `json:"queues,omitempty"`
	Types  []string `json:"types,omitempty"`
}
