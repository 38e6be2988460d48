package worker

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/server/servertest"
)

// events collects a worker's events.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) Event(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) kinds() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := map[string]int{}
	for _, ev := range e.all {
		n[ev.Kind]++
	}
	return n
}

func setupWorker(t *testing.T, jobs int, cfg Config) (*Worker, *events, *client.Client) {
	t.Helper()
	cl, err := client.New(servertest.Start(t).URL, client.Options{})
	require.NoError(t, err)
	reqs := make([]api.EnqueueRequest, jobs)
	for i := range reqs {
		reqs[i] = api.EnqueueRequest{Queue: api.Ptr("q"), Type: api.Ptr("t"), Payload: api.Payload(`{"n":1}`)}
	}
	_, err = cl.EnqueueBulk(context.Background(), reqs)
	require.NoError(t, err)
	ev := &events{}
	cfg.Client, cfg.Queues, cfg.Env, cfg.Events = cl, []string{"q"}, os.Environ(), ev
	if cfg.Output == nil {
		cfg.Output = io.Discard
	}
	return New(cfg), ev, cl
}

// TestWorker_Run: a draining worker runs every job once (those whose ID
// ends in an odd character fail), reading the payload on standard input,
// and returns once nothing can reach it.
func TestWorker_Run(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w, ev, cl := setupWorker(t, 6, Config{Concurrency: 3, Drain: true, Grace: time.Second, DrainPoll: 50 * time.Millisecond,
		Command: []string{"sh", "-c", `read p; echo "got $p"; [ $(( $(printf %d "'${ZIZQ_JOB_ID#${ZIZQ_JOB_ID%?}}") % 2 )) = 0 ]`}, Output: &syncWriter{w: &out}})
	require.NoError(t, w.Run(context.Background()))
	k := ev.kinds()
	require.Equal(t, 6, k[EventStarted])
	require.Equal(t, 6, k[EventSucceeded]+k[EventFailed])
	n, err := cl.CountJobs(context.Background(), api.JobQuery{Statuses: []string{api.StatusScheduled}})
	require.NoError(t, err)
	require.Equal(t, int64(k[EventFailed]), n, "failures wait for their backoff")
	require.Equal(t, 6, strings.Count(out.String(), `: got {"n":1}`))
}

// TestWorker_Stop: Stop lets running commands finish and returns nil; the
// jobs not started stay ready.
func TestWorker_Stop(t *testing.T) {
	t.Parallel()
	w, ev, cl := setupWorker(t, 4, Config{Concurrency: 2, Grace: 10 * time.Second, Command: []string{"sleep", "0.3"}})
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	require.Eventually(t, func() bool { return ev.kinds()[EventStarted] == 2 }, 10*time.Second, 5*time.Millisecond)
	w.Stop("SIGTERM")
	require.NoError(t, <-done)
	k := ev.kinds()
	require.Equal(t, 2, k[EventSucceeded])
	require.Equal(t, 1, k[EventStopping])
	require.Eventually(t, func() bool {
		n, err := cl.CountJobs(context.Background(), api.JobQuery{Statuses: []string{api.StatusReady}})
		return err == nil && n == 2
	}, 10*time.Second, 10*time.Millisecond)
}

// syncWriter serialises writes into a buffer read once the run is over.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
