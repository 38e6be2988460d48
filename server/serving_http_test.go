package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// gatedStore holds its Load after the first `after` live jobs until open
// is closed: the server is caught half loaded.
type gatedStore struct {
	store.Store
	after  int
	open   chan struct{}
	paused chan struct{} // closed when the load waits at the gate
}

func (g *gatedStore) Load(ctx context.Context, l store.Loader) error {
	n := 0
	job := l.Job
	l.Job = func(j store.LiveJob) error {
		if n++; n == g.after+1 {
			close(g.paused)
			select {
			case <-g.open:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return job(j)
	}
	return g.Store.Load(ctx, l)
}

// gate makes a server's store a gatedStore.
func gate(t *testing.T, dir string, g *gatedStore) func(*server.Options) {
	open := servertest.Store(t, dir, sqlite.Options{})
	return func(o *server.Options) {
		o.OpenStore = func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error) {
			st, err := open(ctx, onCommit)
			if err != nil {
				return nil, err
			}
			g.Store = st
			return g, nil
		}
	}
}

// fillBulk enqueues jobs a thousand to a request and returns their IDs.
func fillBulk(t *testing.T, tb *testBundle, bodies []string) []string {
	t.Helper()
	var ids []string
	for len(bodies) > 0 {
		n := min(len(bodies), 1000)
		r := tb.req(t, "POST", "/jobs/bulk", `{"jobs":[`+strings.Join(bodies[:n], ",")+`]}`)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		var out api.BulkJobs
		r.json(t, &out)
		for _, j := range out.Jobs {
			ids = append(ids, j.ID)
		}
		bodies = bodies[n:]
	}
	return ids
}

// within returns the next job frame if one comes within d.
func (ts *takeStream) within(t *testing.T, d time.Duration) (api.Job, bool) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case f, ok := <-ts.frames:
			require.True(t, ok, "take stream closed")
			if len(f) == 0 {
				continue
			}
			var j api.Job
			require.NoError(t, api.Unmarshal(ts.format.Message(), f, &j), "frame: %q", f)
			return j, true
		case <-deadline:
			return api.Job{}, false
		}
	}
}

// ackAll acknowledges jobs in one request.
func ackAll(t *testing.T, tb *testBundle, ids []string) {
	t.Helper()
	body, err := json.Marshal(map[string][]string{"ids": ids})
	require.NoError(t, err)
	r := tb.req(t, "POST", "/jobs/success", body)
	require.Less(t, r.status, 300, "body: %s", r.body)
}

// A restarted server serves the jobs it has loaded while it loads the rest,
// in the one order: the first jobs are delivered with the load half done,
// a better job enqueued meanwhile goes out at once, a worse one waits for
// the jobs already stored, and a request that needs every job waits for
// the load instead of answering wrongly.
func TestRestart_ServesWhileItLoads(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	const stored = 3000
	bodies := make([]string, stored)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"type":"t","queue":"q","priority":%d,"payload":{"n":%d}}`, 1+i%2, i)
	}
	ids := fillBulk(t, tb, bodies)
	priority := map[string]int{}
	for i, id := range ids {
		priority[id] = 1 + i%2
	}
	order := slices.Clone(ids)
	slices.SortFunc(order, func(a, b string) int {
		if priority[a] != priority[b] {
			return priority[a] - priority[b]
		}
		return strings.Compare(a, b)
	})
	last := order[len(order)-1]
	tb.stop()

	g := &gatedStore{after: 2000, open: make(chan struct{}), paused: make(chan struct{})}
	tb = setupStarting(t, tb.dir, gate(t, tb.dir, g))
	released := false
	release := func() {
		if !released {
			released = true
			close(g.open)
		}
	}
	t.Cleanup(release)
	select {
	case <-g.paused:
	case <-time.After(30 * time.Second):
		t.Fatal("the load did not reach the gate")
	}
	require.Eventually(t, func() bool { return tb.req(t, "GET", "/ready", nil).status == http.StatusOK },
		10*time.Second, 10*time.Millisecond, "ready while it loads")

	ts := tb.take(t, "queue=q&prefetch=0")
	first := ts.next(t, 10*time.Second)
	got := []string{first.ID}
	for {
		j, ok := ts.within(t, 300*time.Millisecond)
		if !ok {
			break
		}
		got = append(got, j.ID)
	}
	require.Less(t, len(got), 2000, "only jobs loaded are delivered")
	require.Equal(t, order[:len(got)], got, "the earliest jobs, in order")
	ackAll(t, tb, got) // the acks of jobs loaded are answered at once

	better := tb.enqueue(t, `{"type":"t","queue":"q","priority":0,"payload":null}`)
	require.Equal(t, better.ID, ts.next(t, 10*time.Second).ID, "a better job goes out while the rest loads")
	ackAll(t, tb, []string{better.ID})
	worse := tb.enqueue(t, `{"type":"t","queue":"q","priority":2,"payload":null}`)
	ts.none(t, 300*time.Millisecond)

	// A read of a job not loaded yet waits for the load.
	answer := make(chan reply, 1)
	go func() { answer <- tb.req(t, "GET", "/jobs/"+last, nil) }()
	select {
	case r := <-answer:
		t.Fatalf("answered before the load ended: %d %s", r.status, r.body)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	r := <-answer
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)

	for len(got) < stored {
		j := ts.next(t, 10*time.Second)
		got = append(got, j.ID)
		ackAll(t, tb, []string{j.ID}) // under the server's in-flight limit
	}
	require.Equal(t, order, got, "every stored job in the one order")
	require.Equal(t, worse.ID, ts.next(t, 10*time.Second).ID, "the worse job after the stored ones")
}

// A store whose live jobs have unique keys is served once loaded whole:
// the keys are read after the jobs.
func TestRestart_WithUniqueKeysServesOnceLoaded(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	bodies := make([]string, 1500)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"type":"t","queue":"q","payload":null,"unique_key":"k%d"}`, i)
	}
	fillBulk(t, tb, bodies)
	tb.stop()

	g := &gatedStore{after: 1200, open: make(chan struct{}), paused: make(chan struct{})}
	tb = setupStarting(t, tb.dir, gate(t, tb.dir, g))
	<-g.paused
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, http.StatusServiceUnavailable, tb.req(t, "GET", "/ready", nil).status)
	close(g.open)
	require.Eventually(t, func() bool { return tb.req(t, "GET", "/ready", nil).status == http.StatusOK },
		30*time.Second, 10*time.Millisecond)
	r := tb.req(t, "POST", "/jobs", `{"type":"t","queue":"q","payload":null,"unique_key":"k7"}`)
	require.Equal(t, http.StatusOK, r.status, "a duplicate: %s", r.body)
	var f map[string]json.RawMessage
	r.json(t, &f)
	require.Equal(t, "true", string(f["duplicate"]))
}
