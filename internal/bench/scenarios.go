package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// enqueueScenario measures single and bulk enqueues into a queue no worker
// takes from, then the memory the queued jobs hold.
func (b *runner) enqueueScenario(ctx context.Context, t *target) (*EnqueueReport, error) {
	q := t.queue(b.prefix + "-enqueue")
	rss0, err := t.rss(ctx)
	if err != nil {
		return nil, err
	}
	mk := b.plainJob(q, nil)
	n, warm := b.o.Jobs, warmupOf(b.o.Jobs)
	var sent atomic.Int64
	measure := func(label string, from, bulk int) (Rate, error) {
		sent.Store(0)
		b.prog.set(func() string {
			return fmt.Sprintf("enqueue %s: %d of %d jobs (%d warm-up)", label, sent.Load(), warm+n, warm)
		})
		if err := b.produce(ctx, t, from, from+warm, bulk, mk, nil, 0, &sent); err != nil {
			return Rate{}, err
		}
		start := time.Now()
		if err := b.produce(ctx, t, from+warm, from+warm+n, bulk, mk, nil, 0, &sent); err != nil {
			return Rate{}, err
		}
		d := time.Since(start)
		return Rate{Jobs: n, Seconds: round3(d.Seconds()), JobsPerS: perSecond(n, d)}, nil
	}
	rep := &EnqueueReport{}
	if rep.Single, err = measure("single", 0, 1); err != nil {
		return nil, err
	}
	if rep.Bulk, err = measure("bulk", warm+n, b.o.Bulk); err != nil {
		return nil, err
	}
	rep.Bulk.PerRequest = b.o.Bulk
	rep.Single.PerRequest = 1
	rep.Memory, err = b.memory(ctx, t, rss0, 2*(warm+n))
	return rep, err
}

// memory reads the server's RSS and what it grew by per queued job since
// rss0.
func (b *runner) memory(ctx context.Context, t *target, rss0 int64, queued int) (Memory, error) {
	rss, err := t.rss(ctx)
	if err != nil {
		return Memory{}, err
	}
	m := Memory{RSSBytes: rss, QueuedJobs: queued}
	if queued > 0 {
		per := math.Round(float64(rss-rss0) / float64(queued))
		m.RSSPerQueuedJobBytes = &per
	}
	return m, nil
}

// e2eScenario measures throughput and enqueue-to-delivery latency with
// producers and workers running together.
func (b *runner) e2eScenario(ctx context.Context, t *target) (*E2EReport, error) {
	var subs *subscribers
	if n := b.o.EventSubscribers; n > 0 {
		b.prog.setf("e2e: connecting %d event subscribers", n)
		var err error
		if subs, err = startSubscribers(ctx, t.admin, n); err != nil {
			return nil, err
		}
		defer subs.stop()
	}
	res, err := b.flow(ctx, t, flowSpec{label: "e2e", queue: t.queue(b.prefix + "-e2e"), warmup: warmupOf(b.o.Jobs), jobs: b.o.Jobs})
	if err != nil {
		return nil, err
	}
	var frames int64
	if subs != nil {
		if frames, err = subs.stop(); err != nil {
			return nil, err
		}
	}
	if res.foreign > 0 {
		return nil, fmt.Errorf("workers received %d jobs that were not sent to them", res.foreign)
	}
	rep := &E2EReport{
		Jobs: b.o.Jobs, Warmup: warmupOf(b.o.Jobs), Seconds: round3(res.elapsed.Seconds()),
		JobsPerS: perSecond(b.o.Jobs, res.elapsed), LatencyMs: latencyOf(res.latency, true),
		EventSubscribers: b.o.EventSubscribers, EventFrames: frames,
	}
	rep.Memory, err = b.memory(ctx, t, 0, 0)
	return rep, err
}

// budgetsScenario runs the three budget measurements.
func (b *runner) budgetsScenario(ctx context.Context, t *target) (*BudgetsReport, error) {
	rep := &BudgetsReport{}
	var err error
	if rep.WhileInFlight, err = b.whileInFlight(ctx, t); err != nil {
		return nil, fmt.Errorf("while_in_flight: %w", err)
	}
	for _, rate := range b.o.Rates {
		tb, err := b.timeBased(ctx, t, rate)
		if err != nil {
			return nil, fmt.Errorf("time_based %d/s: %w", rate, err)
		}
		rep.TimeBased = append(rep.TimeBased, tb)
	}
	if rep.Many, rep.Memory, err = b.manyBudgets(ctx, t); err != nil {
		return nil, fmt.Errorf("many budgets: %w", err)
	}
	if rep.Unserved, err = b.unserved(ctx, t); err != nil {
		return nil, fmt.Errorf("unserved: %w", err)
	}
	return rep, nil
}

// unserved measures a served queue on a budget that it shares with
// --unserved jobs of a queue no worker serves: those jobs are in no line
// and must cost the served queue nothing (its throughput, and the entries
// the server examines per decision, read from /metrics).
func (b *runner) unserved(ctx context.Context, t *target) (UnservedReport, error) {
	n := b.o.Jobs
	rep := UnservedReport{Unserved: b.o.Unserved, Jobs: n}
	key := b.prefix + "-shared"
	if err := t.putBudget(ctx, key, api.BudgetInput{Allocation: api.Ptr(int64(4 * b.o.Workers * b.o.Prefetch)), Strategy: &api.StrategyInput{Type: api.Ptr(api.StrategyWhileInFlight)}}); err != nil {
		return rep, err
	}
	run := func(label, queue string) (float64, float64, int64, error) {
		w0, d0, err := b.work(ctx, t)
		if err != nil {
			return 0, 0, 0, err
		}
		res, err := b.flow(ctx, t, flowSpec{label: label, queue: queue, warmup: warmupOf(n), jobs: n, bind: bindTo(key)})
		if err != nil {
			return 0, 0, 0, err
		}
		w1, d1, err := b.work(ctx, t)
		if err != nil {
			return 0, 0, 0, err
		}
		return perSecond(n, res.elapsed), (w1 - w0) / max(d1-d0, 1), res.foreign, nil
	}
	var err error
	if rep.AloneJobsPerS, rep.ExaminedAlone, _, err = run("unserved: served queue alone", t.queue(b.prefix+"-served-a")); err != nil {
		return rep, err
	}
	idle := t.queue(b.prefix + "-unserved")
	fill := func(i int, sent time.Duration) api.EnqueueRequest {
		return api.EnqueueRequest{Type: api.Ptr("bench"), Queue: api.Ptr(idle), Payload: b.payload(-1, sent), Budgets: bindTo(key)(i)}
	}
	var sent atomic.Int64
	b.prog.set(func() string { return fmt.Sprintf("queueing %d of %d jobs nobody serves", sent.Load(), b.o.Unserved) })
	if err := b.produce(ctx, t, 0, b.o.Unserved, max(b.o.Bulk, 1000), fill, nil, 0, &sent); err != nil {
		return rep, err
	}
	label := fmt.Sprintf("unserved: served queue beside %d unserved", b.o.Unserved)
	if rep.BesideJobsPerS, rep.ExaminedBeside, rep.UnservedDeliver, err = run(label, t.queue(b.prefix+"-served-b")); err != nil {
		return rep, err
	}
	if rep.AloneJobsPerS > 0 {
		rep.BesideRatio = round3(rep.BesideJobsPerS / rep.AloneJobsPerS)
	}
	return rep, nil
}

// bindTo binds every job to one budget.
func bindTo(key string) func(int) []api.BindingRequest {
	return func(int) []api.BindingRequest { return []api.BindingRequest{{Key: api.Ptr(key)}} }
}

// whileInFlight loads a while_in_flight budget of --concurrency with a
// backlog: workers count the jobs they run at once (counting down before
// they acknowledge), and how much of the budget's slots they kept busy
// while jobs were parked.
func (b *runner) whileInFlight(ctx context.Context, t *target) (WhileInFlightReport, error) {
	n, work := b.o.Concurrency, b.o.WorkTime
	key := b.prefix + "-wif"
	rep := WhileInFlightReport{Allocation: n, WorkerSlots: b.o.Workers * b.o.Prefetch, WorkTimeMs: ms(work), IdealJobsPerS: perSecond(n, work)}
	if err := t.putBudget(ctx, key, api.BudgetInput{Allocation: api.Ptr(int64(n)), Strategy: &api.StrategyInput{Type: api.Ptr(api.StrategyWhileInFlight)}}); err != nil {
		return rep, err
	}
	q := t.queue(key)
	// Enough jobs to keep the budget busy for --duration.
	jobs := max(4*n, int(float64(n)*float64(b.o.Duration)/float64(work)))
	rep.Jobs = jobs
	var sent atomic.Int64
	b.prog.set(func() string {
		return fmt.Sprintf("while_in_flight %d: enqueueing %d of %d jobs", n, sent.Load(), jobs)
	})
	if err := b.produce(ctx, t, 0, jobs, b.o.Bulk, b.plainJob(q, bindTo(key)), nil, 0, &sent); err != nil {
		return rep, err
	}

	type event struct {
		at      time.Duration
		running int
	}
	var (
		mu         sync.Mutex
		running    int
		events     = make([]event, 0, 2*jobs)
		deliveries = make([]time.Duration, 0, jobs)
	)
	handle := func(_ api.Job, done func()) {
		mu.Lock()
		running++
		rep.MaxConcurrency = max(rep.MaxConcurrency, running)
		at := b.since()
		events = append(events, event{at, running})
		deliveries = append(deliveries, at)
		mu.Unlock()
		go func() {
			time.Sleep(work)
			mu.Lock()
			running--
			events = append(events, event{b.since(), running})
			mu.Unlock()
			done() // counted down before the ack is sent
		}()
	}
	var acked tally
	b.prog.set(func() string {
		return fmt.Sprintf("while_in_flight %d: %d of %d jobs done", n, acked.load(), jobs)
	})
	g := newGroup(ctx)
	b.startWorkers(g, t, q, handle, &acked)
	if err := acked.wait(g.ctx, int64(jobs)); err != nil {
		g.stop()
		return rep, g.orCause(err)
	}
	if err := g.stop(); err != nil {
		return rep, err
	}
	// Jobs are parked from the first delivery to the last; the first
	// tenth is warm-up.
	lo, hi := deliveries[len(deliveries)/10], deliveries[len(deliveries)-1]
	var busy time.Duration
	for i, e := range events {
		end := hi
		if i+1 < len(events) {
			end = min(events[i+1].at, hi)
		}
		if start := max(e.at, lo); end > start {
			busy += time.Duration(e.running) * (end - start)
		}
	}
	if hi > lo {
		rep.Utilisation = round3(float64(busy) / float64(time.Duration(n)*(hi-lo)))
		measured := len(deliveries) - len(deliveries)/10 - 1
		rep.JobsPerS = perSecond(measured, hi-lo)
	}
	return rep, nil
}

// timeBased loads a time_based budget of rate per second (burst rate/10)
// with a standing backlog, and checks the deliveries against its schedule.
func (b *runner) timeBased(ctx context.Context, t *target, rate int) (TimeBasedReport, error) {
	burst := max(1, rate/10)
	key := fmt.Sprintf("%s-tb-%d", b.prefix, rate)
	jobs := burst + int(math.Round(float64(rate)*b.o.Duration.Seconds()))
	rep := TimeBasedReport{RatePerS: rate, Burst: burst, Jobs: jobs}
	in := api.BudgetInput{Allocation: api.Ptr(int64(rate)), Strategy: &api.StrategyInput{
		Type: api.Ptr(api.StrategyTimeBased), DurationMs: api.Ptr(int64(1000)), Burst: api.Ptr(int64(burst))}}
	if err := t.putBudget(ctx, key, in); err != nil {
		return rep, err
	}
	q := t.queue(key)
	var sent atomic.Int64
	b.prog.set(func() string {
		return fmt.Sprintf("time_based %d/s: enqueueing %d of %d jobs", rate, sent.Load(), jobs)
	})
	if err := b.produce(ctx, t, 0, jobs, b.o.Bulk, b.plainJob(q, bindTo(key)), nil, 0, &sent); err != nil {
		return rep, err
	}
	var (
		mu       sync.Mutex
		arrivals = make([]time.Duration, 0, jobs)
		stamps   = make([]int64, 0, jobs)
		acked    tally
	)
	b.prog.set(func() string {
		return fmt.Sprintf("time_based %d/s: %d of %d jobs delivered", rate, acked.load(), jobs)
	})
	g := newGroup(ctx)
	b.startWorkers(g, t, q, func(j api.Job, done func()) {
		mu.Lock()
		arrivals = append(arrivals, b.since())
		stamps = append(stamps, int64(j.DequeuedAt))
		mu.Unlock()
		done()
	}, &acked)
	if err := acked.wait(g.ctx, int64(jobs)); err != nil {
		g.stop()
		return rep, g.orCause(err)
	}
	if err := g.stop(); err != nil {
		return rep, err
	}
	slices.Sort(arrivals)
	slices.Sort(stamps)

	// The most dispatched in any window of w ms, by the server's dispatch
	// stamps (whole milliseconds, rounded down: stamps a..a+w-1 hold the
	// dispatches of the half-open window [a, a+w)).
	for _, w := range []int64{10, 100, 1000} {
		rep.Windows = append(rep.Windows, Window{WindowMs: w, MaxDispatched: mostInWindow(stamps, w), Bound: burst + int(int64(rate)*w/1000)})
	}

	// Job k is due max(0, k-burst+1) periods after the first dispatch. The
	// client cannot see the server's clock, so the schedule is aligned to
	// the least late delivery; the burst and the first tenth of the run
	// are warm-up.
	period := time.Second / time.Duration(rate)
	due := func(k int) time.Duration { return time.Duration(max(0, k-burst+1)) * period }
	warm := max(0, min(jobs-2, burst+int(float64(rate)*b.o.Duration.Seconds()/10)))
	offset := time.Duration(math.MaxInt64)
	for k := warm; k < jobs; k++ {
		offset = min(offset, arrivals[k]-due(k))
	}
	late := make([]time.Duration, 0, jobs-warm)
	for k := warm; k < jobs; k++ {
		late = append(late, arrivals[k]-due(k)-offset)
	}
	rep.LatenessMs = latencyOf(late, false)
	rep.Seconds = round3((arrivals[jobs-1] - arrivals[warm]).Seconds())
	if achieved := rateOf(arrivals[warm:]); achieved > 0 {
		rep.AchievedPerS = math.Round(achieved*10) / 10
		rep.AchievedRatio = round4(achieved / float64(rate))
	}
	return rep, nil
}

// mostInWindow is the most sorted stamps (whole milliseconds) that fall in
// w consecutive milliseconds.
func mostInWindow(stamps []int64, w int64) int {
	most, lo := 0, 0
	for hi := range stamps {
		for stamps[hi]-stamps[lo] >= w {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

// rateOf is the rate of sorted arrivals: the inverse of the least-squares
// slope of arrival time over arrival number, so that the delay of the first
// or the last delivery alone does not move it.
func rateOf(arrivals []time.Duration) float64 {
	n := float64(len(arrivals))
	if n < 2 {
		return 0
	}
	var mx, my float64
	for k, at := range arrivals {
		mx += float64(k)
		my += at.Seconds()
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for k, at := range arrivals {
		dx := float64(k) - mx
		sxy += dx * (at.Seconds() - my)
		sxx += dx * dx
	}
	if sxy <= 0 {
		return 0
	}
	return sxx / sxy
}

func round4(v float64) float64 { return math.Round(v*10000) / 10000 }

// checkParked connects an idle worker of queue (jobs of a queue no worker
// serves wait for one, in no line) and checks that at least n jobs park.
func checkParked(ctx context.Context, t *target, queue string, n int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := t.cl.Take(ctx, client.TakeOptions{Queues: []string{queue}, Prefetch: 1})
	if err != nil {
		return fmt.Errorf("take: %w", err)
	}
	defer stream.Close()
	st, err := t.cl.Stats(ctx)
	if err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	if st.Jobs.Parked < int64(n) {
		return fmt.Errorf("only %d of %d jobs are parked", st.Jobs.Parked, n)
	}
	return nil
}

// manyBudgets compares unbudgeted end-to-end throughput with the same load
// bound to --budgets generous budgets, and with --parked jobs parked on
// --budgets exhausted budgets in the same queue.
func (b *runner) manyBudgets(ctx context.Context, t *target) (ManyBudgetsReport, Memory, error) {
	m, n := b.o.Budgets, b.o.Jobs
	rep := ManyBudgetsReport{Budgets: m, Parked: b.o.Parked, Jobs: n}
	var mem Memory
	run := func(label, queue string, bind func(int) []api.BindingRequest) (float64, int64, error) {
		res, err := b.flow(ctx, t, flowSpec{label: label, queue: queue, warmup: warmupOf(n), jobs: n, bind: bind})
		if err != nil {
			return 0, 0, err
		}
		return perSecond(n, res.elapsed), res.foreign, nil
	}
	putAll := func(label, format string, in api.BudgetInput) error {
		var done atomic.Int64
		b.prog.set(func() string { return fmt.Sprintf("%s: %d of %d budgets created", label, done.Load(), m) })
		return parallel(ctx, 8, m, func(ctx context.Context, i int) error {
			defer done.Add(1)
			return t.putBudget(ctx, fmt.Sprintf(format, b.prefix, i), in)
		})
	}

	var err error
	var foreign int64
	if rep.UnbudgetedJobsPerS, foreign, err = run("many budgets: unbudgeted", t.queue(b.prefix+"-plain"), nil); err != nil {
		return rep, mem, err
	}
	if foreign > 0 {
		return rep, mem, fmt.Errorf("workers received %d jobs that were not sent to them", foreign)
	}

	generous := api.BudgetInput{Allocation: api.Ptr(int64(1_000_000)), Strategy: &api.StrategyInput{Type: api.Ptr(api.StrategyWhileInFlight)}}
	if err := putAll("generous budgets", "%s-g-%d", generous); err != nil {
		return rep, mem, err
	}
	bindGenerous := func(i int) []api.BindingRequest {
		return []api.BindingRequest{{Key: api.Ptr(fmt.Sprintf("%s-g-%d", b.prefix, i%m))}}
	}
	if rep.GenerousJobsPerS, _, err = run(fmt.Sprintf("many budgets: %d generous", m), t.queue(b.prefix+"-generous"), bindGenerous); err != nil {
		return rep, mem, err
	}

	// Exhausted budgets: one token a day, spent by one job each.
	daily := api.BudgetInput{Allocation: api.Ptr(int64(1)), Strategy: &api.StrategyInput{
		Type: api.Ptr(api.StrategyTimeBased), DurationMs: api.Ptr(int64(24 * time.Hour / time.Millisecond)), Burst: api.Ptr(int64(1))}}
	if err := putAll("exhausted budgets", "%s-x-%d", daily); err != nil {
		return rep, mem, err
	}
	bindDaily := func(i int) []api.BindingRequest {
		return []api.BindingRequest{{Key: api.Ptr(fmt.Sprintf("%s-x-%d", b.prefix, i%m))}}
	}
	q := t.queue(b.prefix + "-parked")
	if _, err := b.flow(ctx, t, flowSpec{label: "exhausting budgets", queue: q, jobs: m, bind: bindDaily}); err != nil {
		return rep, mem, err
	}
	rss0, err := t.rss(ctx)
	if err != nil {
		return rep, mem, err
	}
	parked := func(i int, sent time.Duration) api.EnqueueRequest {
		return api.EnqueueRequest{Type: api.Ptr("bench"), Queue: api.Ptr(q), Payload: b.payload(-1, sent), Budgets: bindDaily(i)}
	}
	var sent atomic.Int64
	b.prog.set(func() string { return fmt.Sprintf("parking %d of %d jobs", sent.Load(), b.o.Parked) })
	if err := b.produce(ctx, t, 0, b.o.Parked, max(b.o.Bulk, 1000), parked, nil, 0, &sent); err != nil {
		return rep, mem, err
	}
	if mem, err = b.memory(ctx, t, rss0, b.o.Parked); err != nil {
		return rep, mem, err
	}
	if err := checkParked(ctx, t, q, b.o.Parked); err != nil {
		return rep, mem, err
	}
	if rep.WithParkedJobsPerS, rep.ParkedDelivered, err = run(fmt.Sprintf("many budgets: %d parked", b.o.Parked), q, nil); err != nil {
		return rep, mem, err
	}
	if rep.UnbudgetedJobsPerS > 0 {
		rep.GenerousRatio = round3(rep.GenerousJobsPerS / rep.UnbudgetedJobsPerS)
		rep.WithParkedRatio = round3(rep.WithParkedJobsPerS / rep.UnbudgetedJobsPerS)
	}
	// The memory at the end of the scenario, parked jobs still queued.
	rss, err := t.rss(ctx)
	if err != nil {
		return rep, mem, err
	}
	mem.RSSBytes = rss
	return rep, mem, nil
}
