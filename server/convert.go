package server

import (
	"cmp"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

// wireJob renders a job; the payload only where Zizq shows it.
func wireJob(j store.Job, withPayload bool) api.Job {
	out := api.Job{
		ID:          j.ID,
		Type:        j.Type,
		Queue:       j.Queue,
		Priority:    j.Priority,
		Status:      j.Status.String(),
		ReadyAt:     uint64(j.ReadyAt),
		Attempts:    j.Attempts,
		RetryLimit:  j.RetryLimit,
		DequeuedAt:  uint64(j.DequeuedAt),
		FailedAt:    uint64(j.FailedAt),
		PurgeAt:     uint64(j.PurgeAt),
		CompletedAt: uint64(j.CompletedAt),
		StartBy:     uint64(j.StartBy),
	}
	if withPayload {
		out.Payload = api.Payload(j.Payload)
		if len(out.Payload) == 0 {
			out.Payload = api.Payload("null")
		}
	}
	if j.Backoff != nil {
		out.Backoff = &api.Backoff{Exponent: j.Backoff.Exponent, BaseMs: j.Backoff.BaseMs, JitterMs: j.Backoff.JitterMs}
	}
	if j.Retention != nil {
		out.Retention = &api.Retention{CompletedMs: j.Retention.CompletedMs, DeadMs: j.Retention.DeadMs}
	}
	for _, b := range j.Budgets {
		out.Budgets = append(out.Budgets, api.Binding{Key: b.Key, Cost: b.Cost})
	}
	if j.UniqueKey != "" {
		out.UniqueKey, out.UniqueWhile = j.UniqueKey, j.UniqueWhile.String()
	}
	if b := j.Batch; b != nil {
		out.Batch = &api.Batch{Key: b.Key, When: b.When, Fold: b.Fold}
	}
	return out
}

// enqueued renders a job in an enqueue response: no payload, with the
// duplicate and folded flags.
func enqueued(j core.Enqueued) api.Job {
	out := wireJob(j.Job, false)
	out.Duplicate, out.Folded = &j.Duplicate, &j.Folded
	return out
}

func wireBudget(b store.Budget) api.Budget {
	out := api.Budget{
		Key:         b.Key,
		Allocation:  b.Allocation,
		Strategy:    wireStrategy(b.Strategy, b.DurationMs, b.Burst),
		Paused:      b.Paused,
		PausedUntil: uint64(b.PausedUntil),
		CreatedAt:   uint64(b.CreatedAt),
		UpdatedAt:   uint64(b.UpdatedAt),
	}
	out.Adaptive = wireAdaptive(b.Adaptive)
	if b.Strategy == store.Calendar {
		out.Strategy.Reset, out.Strategy.Timezone = b.Reset, cmp.Or(b.Timezone, "UTC")
	}
	if t := b.PerKey; t != nil {
		out.PerKey = &api.BudgetTemplate{Allocation: t.Allocation, Strategy: wireStrategy(t.Strategy, t.DurationMs, t.Burst)}
	}
	out.Keys = wireKeys(b.Keys)
	return out
}

// wireStrategy renders a strategy: duration and burst only where they
// apply (time_based), burst only when set.
func wireStrategy(kind string, durationMs, burst int64) api.Strategy {
	out := api.Strategy{Type: kind}
	if kind == store.TimeBased {
		out.DurationMs, out.Burst = durationMs, burst
	}
	return out
}
