package api

// Adaptive budgets (issue 26, our extension; the official clients ignore
// it): a budget that backs off when a worker reports that the upstream
// refused (an HTTP 429 or 503, say).

// Default back-off of an "adaptive" member that leaves a field out.
const (
	DefaultAdaptiveDecrease  = 0.5
	DefaultAdaptiveRecoverMs = 60_000
	DefaultAdaptiveFloor     = 0.05
)

// AdaptiveInput is a budget body's "adaptive" member: each refusal
// multiplies the effective rate (or allocation) by Decrease, never below
// Floor × the configured one; with no refusal it climbs back linearly
// over RecoverMs. Fields left out take the defaults.
type AdaptiveInput struct {
	Decrease  *float64 `json:"decrease,omitempty"`
	RecoverMs *int64   `json:"recover_ms,omitempty"`
	Floor     *float64 `json:"floor,omitempty"`
}

// Adaptive is a budget's back-off as rendered.
type Adaptive struct {
	Decrease  float64 `json:"decrease"`
	RecoverMs int64   `json:"recover_ms"`
	Floor     float64 `json:"floor"`
}

// Throttle is a worker's report that the upstream refused: in a failure
// ("throttle", naming one of the job's budgets) or alone (POST
// /budgets/{key}/throttle, where the path names the budget).
// RetryAfterMs, when set, is the upstream's Retry-After: the budget pays
// nothing for that long. Count makes a failure count toward the job's
// retry limit, which a throttled failure otherwise does not.
type Throttle struct {
	Budget       *string `json:"budget,omitempty"`
	RetryAfterMs *int64  `json:"retry_after_ms,omitempty"`
	Count        *bool   `json:"count,omitempty"`
}

// AdaptivePatch is the "adaptive" member of a budget patch: merged field
// by field into the budget's back-off (or the defaults, on a budget that
// has none); null removes the back-off.
type AdaptivePatch = AdaptiveInput

// decodeAdaptive reads a patch's "adaptive" member.
func decodeAdaptive(m member) (AdaptivePatch, error) {
	inner, err := m.object("decrease", "recover_ms", "floor")
	if err != nil {
		return AdaptivePatch{}, err
	}
	var p AdaptivePatch
	if p.Decrease, err = optional[float64](inner.member("decrease"), wantNumber); err != nil {
		return AdaptivePatch{}, err
	}
	if p.RecoverMs, err = optional[int64](inner.member("recover_ms"), wantInteger); err != nil {
		return AdaptivePatch{}, err
	}
	if p.Floor, err = optional[float64](inner.member("floor"), wantNumber); err != nil {
		return AdaptivePatch{}, err
	}
	return p, nil
}
