package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
)

// startBy checks an enqueue request's deadline for waiting (docs/API.md
// §Deadlines) and sets it on j: start_by as sent, or start_within_ms for
// the engine to count from the enqueue. What contradicts itself is 400; a
// start_by that has passed is 422 here when it cannot be otherwise (0),
// else the engine's, which knows the time of the enqueue.
func startBy(req *api.EnqueueRequest, j *core.NewJob) error {
	switch {
	case req.StartBy != nil && req.StartWithinMs != nil:
		return badRequest("start_by and start_within_ms cannot be combined: give one")
	case req.StartBy != nil:
		switch {
		case *req.StartBy == 0:
			return unprocessable("start_by must be in the future: the job would die at once")
		case *req.StartBy > maxTimestampMs:
			return badRequest("start_by must be at most %d", int64(maxTimestampMs))
		}
		j.StartBy = int64(*req.StartBy)
	case req.StartWithinMs != nil:
		switch {
		case *req.StartWithinMs < 1:
			return badRequest("start_within_ms must be at least 1")
		case *req.StartWithinMs > maxTimestampMs:
			return badRequest("start_within_ms must be at most %d", int64(maxTimestampMs))
		}
		j.StartWithinMs = *req.StartWithinMs
	}
	return nil
}

// expiryMetrics count the deaths by start_by and how late, by the clock,
// the engine handled them (the bound is 50 ms).
type expiryMetrics struct {
	expired prometheus.Counter
	late    prometheus.Histogram
}

func newExpiryMetrics() expiryMetrics {
	return expiryMetrics{
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "zizq_jobs_expired_total",
			Help: "Jobs that died of their start_by: not dispatched by then.",
		}),
		late: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "zizq_job_expiry_lateness_seconds",
			Help:    "How late, by the clock, the server handled a job's start_by (its death is dated at the start_by itself).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
	}
}

func (m expiryMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.expired, m.late}
}

// onExpire is the engine's OnExpire hook: it runs under the engine lock, so
// it only counts and observes.
func (m expiryMetrics) onExpire(_ string, _ time.Time, late time.Duration) {
	m.expired.Inc()
	m.late.Observe(max(0, late.Seconds()))
}

func chainExpire(a, b func(string, time.Time, time.Duration)) func(string, time.Time, time.Duration) {
	if a == nil {
		return b
	}
	return func(id string, at time.Time, late time.Duration) {
		a(id, at, late)
		b(id, at, late)
	}
}
