package api

// EnqueueRequest is one job to enqueue (POST /jobs, and each item of
// POST /jobs/bulk). Pointer fields distinguish "absent" from a zero value:
// the server materialises defaults, and rejects missing required fields.
// Payload is nil when the key is absent and the 4 bytes "null" when it is
// sent as null.
type EnqueueRequest struct {
	Type        *string          `json:"type,omitempty"`
	Queue       *string          `json:"queue,omitempty"`
	Payload     Payload          `json:"payload,omitempty"`
	Priority    *uint16          `json:"priority,omitempty"`
	ReadyAt     *uint64          `json:"ready_at,omitempty"`
	RetryLimit  *uint32          `json:"retry_limit,omitempty"`
	Backoff     *BackoffRequest  `json:"backoff,omitempty"`
	Retention   *Retention       `json:"retention,omitempty"`
	UniqueKey   *string          `json:"unique_key,omitempty"`
	UniqueWhile *string          `json:"unique_while,omitempty"`
	Batch       *BatchRequest    `json:"batch,omitempty"`
	Budgets     []BindingRequest `json:"budgets,omitempty"`
	// StartBy (unix ms) or StartWithinMs (from the enqueue) is the job's
	// deadline for waiting (our extension, docs/API.md §Deadlines).
	StartBy       *uint64 `json:"start_by,omitempty"`
	StartWithinMs *int64  `json:"start_within_ms,omitempty"`
}

// BackoffRequest is a backoff override as sent; all three fields are required.
type BackoffRequest struct {
	Exponent *float32 `json:"exponent,omitempty"`
	BaseMs   *uint32  `json:"base_ms,omitempty"`
	JitterMs *uint32  `json:"jitter_ms,omitempty"`
}

// BatchRequest makes a job batched (docs/API.md §Batched jobs): key, when and
// fold are all required.
type BatchRequest struct {
	Key  *string `json:"key,omitempty"`
	When *string `json:"when,omitempty"`
	Fold *string `json:"fold,omitempty"`
}

// BindingRequest binds a job to a budget at enqueue time.
type BindingRequest struct {
	Key        *string      `json:"key,omitempty"`
	Cost       *int64       `json:"cost,omitempty"`
	CreateWith *BudgetInput `json:"create_with,omitempty"`
}

// BulkEnqueueRequest is the body of POST /jobs/bulk.
type BulkEnqueueRequest struct {
	Jobs []EnqueueRequest `json:"jobs"`
}

// FailureRequest is the body of POST /jobs/{id}/failure.
type FailureRequest struct {
	Message   *string `json:"message,omitempty"`
	ErrorType *string `json:"error_type,omitempty"`
	Backtrace *string `json:"backtrace,omitempty"`
	RetryAt   *uint64 `json:"retry_at,omitempty"`
	Kill      *bool   `json:"kill,omitempty"`
	// Budgets settles the job's real cost (issue 25, our extension).
	Budgets []Settle `json:"budgets,omitempty"`
	// Throttle reports that the upstream refused (issue 26).
	Throttle *Throttle `json:"throttle,omitempty"`
}

// Settle is a job's actual cost to one of its time_based or calendar
// budgets, sent with its success or failure (our extension): the cost
// bound at dispatch was the estimate, and the difference is credited back
// or debited now.
type Settle struct {
	Key  string `json:"key"`
	Cost *int64 `json:"cost"`
}

// SuccessRequest is the optional body of POST /jobs/{id}/success.
type SuccessRequest struct {
	Budgets []Settle `json:"budgets,omitempty"`
}

// BudgetInput is the body of POST and PUT /budgets/{key}, and a binding's
// create_with. Unknown fields (including "key") are ignored. PerKey,
// Paused and PausedUntil are our extension (see Budget); create_with
// refuses them.
type BudgetInput struct {
	Allocation  *int64               `json:"allocation,omitempty"`
	Strategy    *StrategyInput       `json:"strategy,omitempty"`
	PerKey      *BudgetTemplateInput `json:"per_key,omitempty"`
	Paused      *bool                `json:"paused,omitempty"`
	PausedUntil *uint64              `json:"paused_until,omitempty"`
	// Adaptive makes the budget back off on refusals (issue 26).
	Adaptive *AdaptiveInput `json:"adaptive,omitempty"`

	// Keys are a family's per-sub-key overrides (issue 26, keys.go).
	Keys map[string]KeyOverrideInput `json:"keys,omitempty"`
}

// BudgetTemplateInput is a family's template as sent: a budget body
// without further family or pause (such fields are ignored).
type BudgetTemplateInput struct {
	Allocation *int64         `json:"allocation,omitempty"`
	Strategy   *StrategyInput `json:"strategy,omitempty"`
}

// StrategyInput is a budget strategy as sent.
type StrategyInput struct {
	Type       *string `json:"type,omitempty"`
	DurationMs *int64  `json:"duration_ms,omitempty"`
	Burst      *int64  `json:"burst,omitempty"`
	Reset      *string `json:"reset,omitempty"`
	Timezone   *string `json:"timezone,omitempty"`
}

// BindingsReplace is the body of PUT /jobs/{id}/budgets.
type BindingsReplace struct {
	Budgets []BindingRequest `json:"budgets"`
}

// Ptr returns a pointer to v; it keeps request literals short.
func Ptr[T any](v T) *T { return &v }
