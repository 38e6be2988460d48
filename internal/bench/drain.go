package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zizq/zizq/api"
)

// drainScenario enqueues --jobs jobs up front in bulks, then drains them
// with --workers take streams that acknowledge in batches: the rate of
// each phase alone, and the memory the backlog held between them.
func (b *runner) drainScenario(ctx context.Context, t *target) (*DrainReport, error) {
	n := b.o.Jobs
	q := t.queue(b.prefix + "-drain")
	rss0, err := t.rss(ctx)
	if err != nil {
		return nil, err
	}
	var sent atomic.Int64
	b.prog.set(func() string { return fmt.Sprintf("drain: enqueueing %d of %d jobs", sent.Load(), n) })
	start := time.Now()
	if err := b.produce(ctx, t, 0, n, b.o.Bulk, b.plainJob(q, nil), nil, 0, &sent); err != nil {
		return nil, err
	}
	d := time.Since(start)
	rep := &DrainReport{Jobs: n, Enqueue: Rate{Jobs: n, PerRequest: b.o.Bulk, Seconds: round3(d.Seconds()), JobsPerS: perSecond(n, d)}}
	if rep.Memory, err = b.memory(ctx, t, rss0, n); err != nil {
		return nil, err
	}

	var (
		acked   tally
		foreign atomic.Int64
	)
	b.prog.set(func() string { return fmt.Sprintf("drain: %d of %d jobs acknowledged", acked.load(), n) })
	g := newGroup(ctx)
	start = time.Now()
	streams := b.startWorkers(g, t, q, func(j api.Job, done func()) {
		if p, err := decodePayload(j.Payload); err != nil || p.I < 0 || p.I >= int64(n) {
			foreign.Add(1)
		}
		done()
	}, &acked)
	if err := acked.wait(g.ctx, int64(n)); err != nil {
		_ = g.stop()
		return nil, g.orCause(err)
	}
	d = time.Since(start)
	if err := g.stop(); err != nil {
		return nil, err
	}
	if k := foreign.Load(); k > 0 {
		return nil, fmt.Errorf("workers received %d jobs that were not sent to them", k)
	}
	rep.Drain = Throughput{Seconds: round3(d.Seconds()), JobsPerS: perSecond(n, d)}
	for _, c := range streams {
		rep.Streams = append(rep.Streams, c.Load())
	}
	return rep, nil
}
