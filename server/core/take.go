package core

import (
	"context"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// Taker is one take stream: the jobs dispatched to it come out of Next,
// whole (payload included), in dispatch order.
type Taker struct {
	s *Service
	t *engine.Taker
}

// Take connects a taker serving the named queues (none: all) with at most
// prefetch unacknowledged jobs (0: unlimited).
func (s *Service) Take(queues []string, prefetch int) (*Taker, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	return &Taker{s: s, t: s.engine.NewTaker(queues, prefetch)}, nil
}

// Notify is signalled when jobs are waiting for Next.
func (t *Taker) Notify() <-chan struct{} { return t.t.Notify() }

// Next appends the jobs dispatched since the last call to buf. Payloads
// come from the cache of recent enqueues, else from the store in one query
// for the batch; a job deleted since its dispatch is left out. Once the
// lease may be lost (Options.LeaseHeld) it hands out nothing more and
// answers ErrLeaseLost: the stream must end, and Close return its jobs.
func (t *Taker) Next(ctx context.Context, buf []store.Job) ([]store.Job, error) {
	start := len(buf)
	buf, spent := t.t.DrainWait(buf)
	frames := buf[start:]
	if len(frames) > 0 && !t.s.leaseHeld() {
		return buf[:start], ErrLeaseLost
	}
	if spent != nil {
		// A calendar budget paid one of them: its spend is durable first,
		// so that a restart never refills what was handed out.
		if err := spent.Wait(ctx); err != nil {
			return buf[:start], translate(err)
		}
	}
	var missing []string
	for i := range frames {
		if p, ok := t.s.cache.take(frames[i].ID); ok {
			frames[i].Payload = p
		} else {
			missing = append(missing, frames[i].ID)
		}
	}
	if len(missing) == 0 {
		return buf, nil
	}
	rows, err := t.s.store.Payloads(ctx, missing)
	if err != nil {
		return buf[:start], translate(err)
	}
	stored := make(map[string]store.JobPayload, len(rows))
	for _, r := range rows {
		stored[r.ID] = r
	}
	kept := frames[:0]
	for _, f := range frames {
		if f.Payload == nil {
			r, ok := stored[f.ID]
			if !ok {
				continue // deleted since it was dispatched
			}
			f.Payload = r.Payload
			if f.FailedAt == 0 {
				f.FailedAt = r.FailedAt // failed before the last restart
			}
		}
		kept = append(kept, f)
	}
	return buf[:start+len(kept)], nil
}

// leaseHeld reports whether the service may still hand jobs out.
func (s *Service) leaseHeld() bool { return s.opts.LeaseHeld == nil || s.opts.LeaseHeld() }

// Close disconnects the taker: the jobs it holds go back to ready.
func (t *Taker) Close() { t.t.Close() }
