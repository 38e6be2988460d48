package engine

import (
	"math"
	"sort"
	"time"

	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/store"
)

// Counts are live job counts; Ready excludes parked jobs.
type Counts struct {
	Scheduled, Ready, Parked, InFlight int64
}

func countsOf(c *[numStates]int64) Counts {
	return Counts{Scheduled: c[stScheduled], Ready: c[stReady], Parked: c[stParked], InFlight: c[stInFlight]}
}

func (c Counts) total() int64 { return c.Scheduled + c.Ready + c.Parked + c.InFlight }

// QueueCounts are the live counts of one queue.
type QueueCounts struct {
	Name string
	Counts
}

// Stats is the engine's part of GET /stats.
type Stats struct {
	Started time.Time
	Jobs    Counts
	Queues  []QueueCounts
	Budgets []BudgetView
}

// Stats returns live counts and every budget with its live figures.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := Stats{Started: e.started, Jobs: countsOf(&e.counts), Budgets: e.budgetViews(true)}
	for name, q := range e.queues {
		if c := countsOf(&q.counts); c.total() > 0 {
			s.Queues = append(s.Queues, QueueCounts{Name: name, Counts: c})
		}
	}
	sort.Slice(s.Queues, func(i, j int) bool { return s.Queues[i].Name < s.Queues[j].Name })
	return s
}

// Why says what a live job waits for.
type Why struct {
	Job        store.Job
	WaitingFor string // schedule, budget, worker or nothing
	Budgets    []WhyBudget
}

// WhyBudget is one budget that refuses a parked job.
type WhyBudget struct {
	Key          string
	Cost         int64
	Available    float64
	Ahead        int64
	AffordableAt *int64 // ms; nil when it waits on releases
}

// Why explains a live job's state; false if the job is not live.
func (e *Engine) Why(id string) (Why, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.jobs[id]
	if j == nil {
		return Why{}, false
	}
	w := Why{Job: j.snapshot()}
	switch j.state {
	case stScheduled:
		w.WaitingFor = "schedule"
	case stParked:
		w.WaitingFor = "budget"
		w.Budgets = e.refusals(j)
	case stReady:
		w.WaitingFor = "worker"
		if e.roomyTaker(j.q) != nil {
			w.WaitingFor = "nothing"
		}
	default:
		w.WaitingFor = "nothing"
	}
	return w, true
}

// refusals describes each line a parked job waits in.
func (e *Engine) refusals(j *job) []WhyBudget {
	now := e.now()
	ns := now.UnixNano()
	var out []WhyBudget
	for _, b := range j.binds {
		if !b.inLine {
			continue
		}
		var ahead, costAhead int64
		b.a.line.Ascend(func(h *job) bool {
			if !before(h, j) {
				return false
			}
			ahead++
			costAhead += h.bindOf(b.a).cost
			return true
		})
		wb := WhyBudget{Key: b.a.cfg.Key, Cost: b.cost, Available: round3(b.a.pool.Available(ns)), Ahead: ahead}
		if b.a.pool.Kind() == budget.TimeBased {
			wb.AffordableAt = affordableAt(b.a, costAhead+b.cost, now)
		}
		out = append(out, wb)
	}
	return out
}

// affordableAt estimates when a time_based budget will have accrued need
// tokens, if nobody else takes any.
func affordableAt(a *account, need int64, now time.Time) *int64 {
	ns := now.UnixNano()
	if need <= a.pool.Capacity() {
		if at, ok := a.pool.AffordableAt(need, ns); ok {
			ms := int64(math.Ceil(float64(at) / 1e6))
			return &ms
		}
	}
	deficit := float64(need) - a.pool.Available(ns)
	rate := float64(a.cfg.Allocation) / float64(a.cfg.DurationMs) // tokens per ms
	ms := nowMs(now) + int64(math.Ceil(deficit/rate))
	return &ms
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
