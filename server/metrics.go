package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

// Metrics (GET /metrics, Prometheus text format). Two kinds:
//
//   - Events are counted where they happen, with nothing but atomic adds
//     and histogram observations: enqueues (as their inserts commit),
//     dispatches (the engine's OnDispatch, under its lock), acks and
//     failures (their handlers), and the store's transactions (OnCommit).
//   - Levels (jobs by queue and status, budget figures, file sizes) are
//     read when Prometheus scrapes, from Engine.Stats — the same short lock
//     as GET /stats — and file metadata. Nothing is kept up to date for
//     them on the hot path, and no lock is held while the answer is written.
//
// The registry is the server's own, so several servers can run in one
// process (tests).

// metrics holds the server's event metrics and its registry.
type metrics struct {
	reg *prometheus.Registry

	enqueued       prometheus.Counter
	dispatched     prometheus.Counter
	acked          prometheus.Counter
	failedRetry    prometheus.Counter
	failedDead     prometheus.Counter
	dispatchWait   prometheus.Histogram
	parked         *prometheus.HistogramVec
	commitGroups   prometheus.Histogram
	commitOps      prometheus.Histogram
	commitSeconds  prometheus.Histogram
	commitFailures prometheus.Counter
	eventsDropped  prometheus.Counter
	expiries       expiryMetrics

	// parkedKeys are the budget keys with a parked-time series, so the
	// series of deleted budgets can be dropped at scrape time.
	parkedKeys sync.Map // string -> struct{}
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zizq_job_failures_total",
		Help: "Failures reported by workers, by outcome: retry (scheduled again) or dead.",
	}, []string{"outcome"})
	m.failedRetry = failures.WithLabelValues("retry")
	m.failedDead = failures.WithLabelValues("dead")
	m.enqueued = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zizq_jobs_enqueued_total",
		Help: "Jobs enqueued, counted as their inserts commit.",
	})
	m.dispatched = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zizq_jobs_dispatched_total",
		Help: "Jobs handed to workers (a job taken again after a disconnect counts again).",
	})
	m.acked = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zizq_jobs_completed_total",
		Help: "Jobs acknowledged as successful by workers.",
	})
	m.dispatchWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "zizq_dispatch_latency_seconds",
		Help:    "Time from a job's ready_at (its enqueue time, unless scheduled or retried) to its dispatch.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
	})
	m.parked = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "zizq_budget_wait_seconds",
		Help:    "Time dispatched jobs bound to a budget waited between becoming ready and dispatch (parked, or waiting for a worker), by each budget the job is bound to.",
		Buckets: []float64{.01, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600},
	}, []string{"budget"})
	m.commitGroups = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "zizq_store_commit_batch_groups",
		Help:    "Writes (appended groups) committed per store transaction: the group-commit batch size.",
		Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
	})
	m.commitOps = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "zizq_store_commit_batch_ops",
		Help:    "Row changes per store transaction.",
		Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000},
	})
	m.commitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "zizq_store_commit_duration_seconds",
		Help:    "Time to run and commit one store transaction.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
	m.commitFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zizq_store_commit_failures_total",
		Help: "Store transactions in which at least one write failed.",
	})
	m.eventsDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zizq_event_subscribers_dropped_total",
		Help: "Admin event streams (/events) dropped because the dashboard read nothing for too long.",
	})
	subscribers := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "zizq_event_subscribers",
		Help: "Admin event streams (/events) connected.",
	}, func() float64 { return float64(s.core.EventStats().Subscribers) })
	m.expiries = newExpiryMetrics()
	m.reg.MustRegister(m.expiries.collectors()...)
	m.reg.MustRegister(failures, m.enqueued, m.dispatched, m.acked, m.dispatchWait, m.parked,
		m.commitGroups, m.commitOps, m.commitSeconds, m.commitFailures, m.eventsDropped, subscribers,
		&levels{s: s, m: m},
		roleCollector{s.roleNow},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// onDispatch is the engine's OnDispatch hook: it runs under the engine lock,
// so it only counts and observes.
func (m *metrics) onDispatch(j store.Job, at time.Time, waitingSince int64) {
	m.dispatched.Inc()
	ms := at.UnixMilli()
	m.dispatchWait.Observe(float64(max(0, ms-j.ReadyAt)) / 1000)
	if waitingSince == 0 {
		return
	}
	secs := float64(max(0, ms-waitingSince)) / 1000
	for _, b := range j.Budgets {
		if _, ok := m.parkedKeys.Load(b.Key); !ok {
			m.parkedKeys.Store(b.Key, struct{}{})
		}
		m.parked.WithLabelValues(b.Key).Observe(secs)
	}
}

// onCommit is the store's OnCommit hook, on the writer goroutine.
func (m *metrics) onCommit(c store.CommitInfo) {
	m.commitGroups.Observe(float64(c.Groups))
	m.commitOps.Observe(float64(c.Ops))
	m.commitSeconds.Observe(c.Duration.Seconds())
	if c.Failed {
		m.commitFailures.Inc()
	}
	if c.Inserts > 0 {
		m.enqueued.Add(float64(c.Inserts))
	}
}

// metricsHandler answers GET /metrics.
func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{ErrorLog: slogPromLogger{s}}).ServeHTTP(w, r)
}

type slogPromLogger struct{ s *Server }

func (l slogPromLogger) Println(v ...any) { l.s.log.Warn("metrics", "err", v) }

// Descriptions of the levels read at scrape time.
var (
	descReady          = prometheus.NewDesc("zizq_ready", "1 once the server serves (GET /ready answers 200), else 0.", nil, nil)
	descJobs           = prometheus.NewDesc("zizq_jobs", "Live jobs by queue and status (ready excludes parked jobs).", []string{"queue", "status"}, nil)
	descTakes          = prometheus.NewDesc("zizq_take_connections", "Open take streams.", nil, nil)
	descDBBytes        = prometheus.NewDesc("zizq_store_database_bytes", "Size of the database file.", nil, nil)
	descWALBytes       = prometheus.NewDesc("zizq_store_wal_bytes", "Size of the database's write-ahead log.", nil, nil)
	descQueueDepth     = prometheus.NewDesc("zizq_store_queue_depth", "Writes (appended groups) waiting in the store's group-commit queue, the batch being committed included.", nil, nil)
	descBudgetAvail    = prometheus.NewDesc("zizq_budget_available_tokens", "Tokens a budget has available now.", []string{"budget"}, nil)
	descBudgetCapacity = prometheus.NewDesc("zizq_budget_capacity_tokens", "Most tokens a budget holds: its allocation, or its burst (time_based).", []string{"budget"}, nil)
	descBudgetHeld     = prometheus.NewDesc("zizq_budget_held_tokens", "Tokens held by in-flight jobs (while_in_flight budgets).", []string{"budget"}, nil)
	descBudgetInFlight = prometheus.NewDesc("zizq_budget_in_flight_jobs", "In-flight jobs bound to a budget.", []string{"budget"}, nil)
	descBudgetParked   = prometheus.NewDesc("zizq_budget_parked_jobs", "Jobs of served queues waiting in a budget's line that it cannot pay now.", []string{"budget"}, nil)
	descBudgetOldest   = prometheus.NewDesc("zizq_budget_oldest_parked_seconds", "How long the first job of a budget's line has waited since it became ready (0 when none).", []string{"budget"}, nil)
	descBudgetDispatch = prometheus.NewDesc("zizq_budget_dispatched_total", "Jobs dispatched against a budget since the server started (or the budget was created).", []string{"budget"}, nil)
	descDecisions      = prometheus.NewDesc("zizq_dispatch_decisions_total", "Dispatch decisions the engine made.", nil, nil)
	descExamined       = prometheus.NewDesc("zizq_dispatch_entries_examined_total", "Groups and budgets the engine's decisions looked at: per decision it stays flat however many jobs wait for a queue no worker serves.", nil, nil)
)

// levels collects the scrape-time metrics.
type levels struct {
	s *Server
	m *metrics
}

func (l *levels) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descReady, descJobs, descTakes, descDBBytes, descWALBytes, descQueueDepth,
		descBudgetAvail, descBudgetCapacity, descBudgetHeld, descBudgetInFlight, descBudgetParked,
		descBudgetOldest, descBudgetDispatch, descDecisions, descExamined} {
		ch <- d
	}
}

func (l *levels) Collect(ch chan<- prometheus.Metric) {
	s := l.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descTakes, float64(s.takes.Load()))
	if !s.isServing() {
		gauge(descReady, 0)
		return
	}
	gauge(descReady, 1)
	if !s.isReady() { // the rest of the figures once the engine is loaded whole
		return
	}
	dbBytes, walBytes := s.core.Sizes()
	gauge(descDBBytes, float64(dbBytes))
	gauge(descWALBytes, float64(walBytes))
	gauge(descQueueDepth, float64(s.core.QueueDepth()))

	examined, decisions := s.core.Work()
	ch <- prometheus.MustNewConstMetric(descDecisions, prometheus.CounterValue, float64(decisions))
	ch <- prometheus.MustNewConstMetric(descExamined, prometheus.CounterValue, float64(examined))

	st, err := s.core.Stats(context.Background()) // ready (above): no wait; the engine's own short lock; nothing else is held
	if err != nil {
		return
	}
	for _, q := range st.Queues {
		gauge(descJobs, float64(q.Scheduled), q.Name, "scheduled")
		gauge(descJobs, float64(q.Ready), q.Name, "ready")
		gauge(descJobs, float64(q.Parked), q.Name, "parked")
		gauge(descJobs, float64(q.InFlight), q.Name, "in_flight")
	}
	keys := make(map[string]struct{}, len(st.Budgets))
	for _, b := range st.Budgets {
		key := b.Budget.Key
		keys[key] = struct{}{}
		l.budget(ch, key, b.State)
	}
	// Parked-time series of budgets that no longer exist go.
	l.m.parkedKeys.Range(func(k, _ any) bool {
		if _, ok := keys[k.(string)]; !ok {
			l.m.parkedKeys.Delete(k)
			l.m.parked.DeleteLabelValues(k.(string))
		}
		return true
	})
}

func (l *levels) budget(ch chan<- prometheus.Metric, key string, st *core.BudgetState) {
	if st == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, key)
	}
	gauge(descBudgetAvail, st.Available)
	gauge(descBudgetCapacity, float64(st.Capacity))
	gauge(descBudgetHeld, float64(st.Held))
	gauge(descBudgetInFlight, float64(st.InFlight))
	gauge(descBudgetParked, float64(st.Parked))
	var oldest float64
	if st.OldestParkedMs != nil {
		oldest = float64(*st.OldestParkedMs) / 1000
	}
	gauge(descBudgetOldest, oldest)
	ch <- prometheus.MustNewConstMetric(descBudgetDispatch, prometheus.CounterValue, float64(st.Dispatched), key)
}

// failed counts a worker's failure report by its outcome.
func (m *metrics) failed(outcome store.Status) {
	if outcome == store.Dead {
		m.failedDead.Inc()
		return
	}
	m.failedRetry.Inc()
}
