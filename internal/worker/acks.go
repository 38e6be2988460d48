package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// Retry pacing of an ack the server did not take.
const (
	ackRetryFirst = 100 * time.Millisecond
	ackRetryMax   = 5 * time.Second
)

// acker delivers the results of finished jobs: POST /jobs/{id}/success or
// /failure, each retried until the server takes it. A 404 means the job is
// no longer in flight: the take stream that held it dropped while the
// command ran, so the server put it back in the queue. The result is then
// kept, and sent again if the job comes back to this worker (redeliver),
// so that it does not run a second time here.
type acker struct {
	cl     *client.Client
	report func(string)
	// changed is signalled after every change of state, for the worker's
	// loop to look again.
	changed chan struct{}

	mu      sync.Mutex
	pending map[string]*ack
	wg      sync.WaitGroup
}

// ack is the result of one job, on its way to the server.
type ack struct {
	id string
	// fail is the failure report; nil means success.
	fail *api.FailureRequest
	// settles are the run's real costs, sent with its success or failure;
	// dropped if the server refuses them, so that the outcome still goes.
	settles []api.Settle
	// attempts is the job's attempts when it was delivered: a frame of the
	// same job with more attempts is a new attempt, not this one again.
	attempts uint32
	wake     chan struct{}
	// redelivered: the job came back to this worker while an attempt was
	// under way, so a 404 of that attempt is stale.
	redelivered bool
	// orphan: the server said 404 and the job has not come back.
	orphan bool
	// refused: the server refused it for good (not a 404); it is reported.
	refused bool
	// unsure: an attempt got no answer, so it may have taken effect.
	unsure  bool
	lastErr error
}

func newAcker(cl *client.Client, report func(string)) *acker {
	return &acker{cl: cl, report: report, changed: make(chan struct{}, 1), pending: map[string]*ack{}}
}

// submit starts delivering a job's result; it runs until it is delivered
// or ctx ends.
func (a *acker) submit(ctx context.Context, j jobRef, fail *api.FailureRequest, settles []api.Settle) {
	k := &ack{id: j.id, fail: fail, settles: settles, attempts: j.attempts, wake: make(chan struct{}, 1)}
	a.mu.Lock()
	if old := a.pending[j.id]; old != nil {
		// A later run of the job (a new attempt) replaces a result kept
		// for an earlier one: wake that one's sender, which then ends.
		select {
		case old.wake <- struct{}{}:
		default:
		}
	}
	a.pending[j.id] = k
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.deliver(ctx, k)
	}()
}

// redeliver is told of a frame of a job this worker has a result for. It
// reports whether the frame is that job again (so it must not run): the
// result is then sent at once.
func (a *acker) redeliver(j jobRef) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := a.pending[j.id]
	if k == nil || j.attempts > k.attempts {
		return false
	}
	if k.orphan {
		k.orphan = false
	} else {
		k.redelivered = true
	}
	select {
	case k.wake <- struct{}{}:
	default:
	}
	return true
}

// busy is how many results are still being sent (orphans do not count:
// they wait for a job that may never come back; nor do refused ones).
func (a *acker) busy() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, k := range a.pending {
		if !k.orphan && !k.refused {
			n++
		}
	}
	return n
}

// undelivered describes every result not delivered, in ID order; call it
// once the context of the submits has ended and wait has returned.
func (a *acker) undelivered() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for id, k := range a.pending {
		why := "the server no longer holds it in flight (it went back to its queue when the take stream dropped, or was deleted)"
		if !k.orphan && k.lastErr != nil {
			why = k.lastErr.Error()
		} else if !k.orphan {
			why = "the worker stopped before it was sent"
		}
		out = append(out, fmt.Sprintf("job %s: %s", id, why))
	}
	sort.Strings(out)
	return out
}

func (a *acker) wait() { a.wg.Wait() }

func (a *acker) notify() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

func (a *acker) deliver(ctx context.Context, k *ack) {
	delay := ackRetryFirst
	for a.current(k) {
		err := a.send(ctx, k)
		a.mu.Lock()
		switch {
		case a.pending[k.id] != k:
			a.mu.Unlock()
			return // superseded by a later result of the same job
		case err == nil:
			delete(a.pending, k.id)
			back := k.lastErr != nil && client.IsNotFound(k.lastErr)
			a.mu.Unlock()
			if back {
				a.report(fmt.Sprintf("job %s came back to this worker: its result is delivered, and it did not run again", k.id))
			}
			a.notify()
			return
		case ctx.Err() != nil:
			a.mu.Unlock()
			return
		case client.IsNotFound(err) && k.redelivered:
			k.redelivered = false // the attempt crossed the frame: again
			a.mu.Unlock()
			continue
		case client.IsNotFound(err):
			k.orphan, k.lastErr = true, err
			a.mu.Unlock()
			a.report(fmt.Sprintf("job %s finished, but the server no longer holds it in flight (the take stream dropped while it ran): its result is kept and sent if the job comes back to this worker", k.id))
			a.notify()
			if !a.sleep(ctx, k, -1) {
				return
			}
			delay = ackRetryFirst
			continue
		case retryable(err):
			k.unsure, k.lastErr = true, err
			a.mu.Unlock()
		case k.fail != nil && k.fail.Throttle != nil && client.IsValidation(err) && (blamesThrottle(err) || len(k.settles) == 0):
			// The throttle may name a budget the job is not bound to, or
			// wait longer than the server takes: the failure must not go
			// with it.
			f := *k.fail
			f.Throttle = nil
			k.fail = &f
			a.mu.Unlock()
			a.report(fmt.Sprintf("job %s: the server refused the throttle of its result file (%v): its failure is sent without it", k.id, err))
			continue
		case len(k.settles) > 0 && client.IsValidation(err):
			// The costs may be what the server refuses (a budget the job is
			// not bound to, say): the outcome must not go with them.
			k.settles = nil
			a.mu.Unlock()
			a.report(fmt.Sprintf("job %s: the server refused the costs of its result file (%v): its result is sent without them", k.id, err))
			continue
		default: // refused: sending it again would not help
			k.refused, k.lastErr = true, err
			a.mu.Unlock()
			a.report(fmt.Sprintf("job %s: the server refused its result: %v", k.id, err))
			a.notify()
			return
		}
		if !a.sleep(ctx, k, delay) {
			return
		}
		delay = min(2*delay, ackRetryMax)
	}
}

// current reports whether k is still the job's result to send.
func (a *acker) current(k *ack) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pending[k.id] == k
}

// sleep waits for d (forever when negative), a redelivery, or the end of
// ctx; it reports false when ctx ended.
func (a *acker) sleep(ctx context.Context, k *ack, d time.Duration) bool {
	var timer <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d/2 + rand.N(d/2+1))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-k.wake:
	case <-timer:
	}
	return true
}

// send makes one attempt. A 404 after an attempt that got no answer may
// mean that attempt took effect: the job's state tells.
func (a *acker) send(ctx context.Context, k *ack) error {
	var err error // k.settles and k.fail change only in deliver, this goroutine
	if k.fail == nil {
		err = a.cl.AckWith(ctx, k.id, k.settles)
	} else {
		fail := *k.fail
		fail.Budgets = k.settles
		_, err = a.cl.Fail(ctx, k.id, fail)
	}
	if !client.IsNotFound(err) || !k.unsure {
		return err
	}
	j, gerr := a.cl.GetJob(ctx, k.id)
	switch {
	case client.IsNotFound(gerr) && k.fail == nil:
		return nil // completed, and deleted at once (no retention)
	case gerr != nil:
		return err
	case k.fail == nil && j.Status == api.StatusCompleted, k.fail != nil && j.Attempts > k.attempts:
		return nil
	}
	return err
}

// blamesThrottle reports whether a refusal names the failure's throttle:
// the server's messages of it name their member ("throttle.budget …").
func blamesThrottle(err error) bool {
	return strings.Contains(err.Error(), "throttle")
}

// retryable reports whether an ack may succeed when sent again: no answer,
// or a server error (storage unavailable, no leader).
func retryable(err error) bool {
	s := client.StatusOf(err)
	return client.IsUnreachable(err) || s >= http.StatusInternalServerError || s == http.StatusTooManyRequests ||
		(s == 0 && !errors.Is(err, context.Canceled))
}
