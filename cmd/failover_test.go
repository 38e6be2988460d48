package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
	"github.com/zizq/zizq/store/postgres/pgtest"
)

// failoverLease is the servers' --lease: short, so that the test is quick,
// and long enough for a loaded 2-core machine to renew it in time.
const failoverLease = "2s"

// clusterStats is GET /stats of a server of a cluster, or the zero value
// when it does not answer.
func clusterStats(url string) api.Stats {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/stats", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return api.Stats{}
	}
	defer resp.Body.Close()
	var st api.Stats
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st
}

// leaderOf waits until one of ps leads, at a term above after, and
// returns its index and term.
func leaderOf(t *testing.T, ps []*proc, after int64, within time.Duration) (int, int64) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for i, p := range ps {
			if st := clusterStats(p.url); st.Role == "leader" && st.Term > after {
				if ready, _, err := tryDo("GET", p.url+"/ready", nil); err == nil && ready == http.StatusOK {
					return i, st.Term
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no server leads at a term above %d within %s", after, within)
	return 0, 0
}

// consumeAgain takes and acks jobs of queue through url until ctx ends,
// opening a new take stream whenever one ends (as the official clients
// do when the leader changes). A job read after its ack was answered 204
// is passed to again, with the time its stream was opened.
func consumeAgain(ctx context.Context, url, queue string, l *ledger, again func(id string, opened time.Time)) {
	for ctx.Err() == nil {
		opened := time.Now()
		req, _ := http.NewRequestWithContext(ctx, "GET", url+"/jobs/take?prefetch=8&queue="+queue, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		frames := api.NewFrameReader(resp.Body, api.NDJSON)
		for {
			j, err := frames.Job()
			if err != nil {
				break
			}
			l.mu.Lock()
			if l.acked[j.ID] {
				again(j.ID, opened)
			}
			l.acking[j.ID] = true
			l.mu.Unlock()
			if status, _, err := tryDo("POST", url+"/jobs/"+j.ID+"/success", nil); err == nil && status == http.StatusNoContent {
				l.add(l.acked, j.ID)
			}
		}
		resp.Body.Close()
	}
}

// storedStatuses counts the jobs of the cluster's database by status, as
// stored, whatever any server holds in memory.
func storedStatuses(t *testing.T, dsn string) map[int]int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT status, count(*) FROM jobs GROUP BY status`)
	require.NoError(t, err)
	out := map[int]int{}
	for rows.Next() {
		var status, n int
		require.NoError(t, rows.Scan(&status, &n))
		out[status] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// jobsOnceStreamsClosed lists every job once none the ledger enqueued
// and sent no ack for is in flight, or after 10 s. The workers' take
// streams are closed when their goroutines return, but the leader puts
// their jobs back only once it has seen the close, which goes through a
// follower: a listing made at once may still find one in flight.
func jobsOnceStreamsClosed(t *testing.T, leader string, l *ledger) map[string]api.Job {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs := allJobs(t, leader)
		held := 0
		for id := range l.enqueued {
			if j, ok := jobs[id]; ok && !l.acking[id] && j.Status == "in_flight" {
				held++
			}
		}
		if held == 0 || time.Now().After(deadline) {
			return jobs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFailover_LeaderLost runs three servers on one PostgreSQL database,
// producers and workers through the two followers, and takes the leader
// away under load: killed (SIGKILL), or stopped (SIGSTOP) and resumed once
// another leads. Another server leads within 10 s; every enqueue answered
// 201 is delivered or still there; no job acknowledged with 204 is
// delivered again; the budget, its bindings and the cron group survive and
// no while_in_flight token leaks; and the database holds exactly what the
// new leader holds: the old one wrote nothing after it lost the lease.
func TestFailover_LeaderLost(t *testing.T) {
	for _, c := range []struct {
		name   string
		signal syscall.Signal
	}{{"KillNine", syscall.SIGKILL}, {"StopThenContinue", syscall.SIGSTOP}} {
		t.Run(c.name, func(t *testing.T) {
			dsn := pgtest.Schema(t)
			ps := make([]*proc, 3)
			for i := range ps {
				ps[i] = startServer(t, "--database-url", dsn, "--lease", failoverLease)
			}
			lead, term := leaderOf(t, ps, 0, 20*time.Second)
			var followers []*proc
			for i, p := range ps {
				if i != lead {
					followers = append(followers, p)
				}
			}
			entry := map[string]any{"name": "tick", "expression": "* * * * * *", "timezone": "UTC",
				"job": map[string]any{"type": "tick", "queue": "cron", "payload": 1}}
			status, data := do(t, "PUT", followers[0].url+"/crons/g", map[string]any{"entries": []any{entry}})
			require.Equal(t, http.StatusOK, status, "%s", data)
			status, data = do(t, "PUT", followers[1].url+"/budgets/conc", map[string]any{"allocation": 3, "strategy": map[string]any{"type": "while_in_flight"}})
			require.Equal(t, http.StatusOK, status, "%s", data)

			l := &ledger{enqueued: map[string]bool{}, acking: map[string]bool{}, acked: map[string]bool{}}
			var redelivered sync.Map
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for i := range 4 {
				f := followers[i%2]
				wg.Add(2)
				go func() { defer wg.Done(); produce(ctx, f.url, l, true) }()
				go func() {
					defer wg.Done()
					consumeAgain(ctx, f.url, "plain", l, func(id string, _ time.Time) { redelivered.Store(id, true) })
				}()
			}
			time.Sleep(1500 * time.Millisecond)

			old := ps[lead]
			require.NoError(t, old.cmd.Process.Signal(c.signal))
			lost := time.Now()
			next, nextTerm := leaderOf(t, followers, term, 10*time.Second)
			t.Logf("%s: %s leads at term %d %s after the leader was lost", c.name, followers[next].url, nextTerm, time.Since(lost).Round(time.Millisecond))
			time.Sleep(1500 * time.Millisecond) // load on the new leader
			if c.signal == syscall.SIGSTOP {
				require.NoError(t, old.cmd.Process.Signal(syscall.SIGCONT))
				require.Eventually(t, func() bool {
					st := clusterStats(old.url)
					return st.Role == "follower" && st.Term == nextTerm
				}, 10*time.Second, 50*time.Millisecond, "the resumed leader steps down and follows")
				time.Sleep(500 * time.Millisecond) // load through all three
			}
			cancel()
			wg.Wait()
			require.NotEmpty(t, l.enqueued)
			require.NotEmpty(t, l.acked)

			leader := followers[next].url
			status, _ = do(t, "DELETE", leader+"/crons/g", nil)
			require.Equal(t, http.StatusNoContent, status, "the cron group survived the failover")
			jobs := jobsOnceStreamsClosed(t, leader, l)
			redelivered.Range(func(id, _ any) bool {
				t.Errorf("job %s was delivered again after its ack was answered 204", id)
				return true
			})
			l.requireNoneCameBack(t, jobs)
			limited, ticks := 0, 0
			for id := range l.enqueued {
				if l.acking[id] {
					continue // completed, or not: either is correct
				}
				j, ok := jobs[id]
				require.True(t, ok, "enqueue %s answered 201 is lost", id)
				require.Equal(t, "ready", j.Status)
				if j.Queue == "limited" {
					require.Equal(t, []api.Binding{{Key: "conc", Cost: 1}}, j.Budgets)
					limited++
				}
			}
			for _, j := range jobs {
				if j.Queue == "cron" && j.ReadyAt > uint64(lost.UnixMilli())+2000 {
					ticks++
				}
			}
			require.Positive(t, ticks, "the new leader fires the cron")
			require.Greater(t, limited, 3, "the setup leaves more budgeted jobs than the budget allows at once")
			status, data = do(t, "GET", followers[1-next].url+"/budgets/conc", nil)
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, string(data), `"allocation":3`)

			// Nothing is in flight: the database and the leader agree on
			// every job, and exactly 3 budgeted jobs run at once.
			st := clusterStats(leader)
			require.Zero(t, st.Jobs.InFlight)
			want := map[int]int{1: int(st.Jobs.Ready + st.Jobs.Parked)}
			if st.Jobs.Scheduled > 0 {
				want[0] = int(st.Jobs.Scheduled)
			}
			require.Equal(t, want, storedStatuses(t, dsn), "the database holds what the leader holds")
			require.Equal(t, 3, takeCount(t, followers[1-next].url, "limited", 2*time.Second))
		})
	}
}

func TestServe_ClusterFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		msg  string
	}{
		{"LeaseTooShort", []string{"--lease", "100ms"}, "--lease must be at least 300ms"},
		{"AdvertiseNotURL", []string{"--advertise-url", "node1:7890"}, `invalid --advertise-url "node1:7890"`},
		{"AdvertiseScheme", []string{"--advertise-url", "ftp://node1:7890"}, `invalid --advertise-url "ftp://node1:7890"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"serve", "--port", "0", "--database-url", "postgres://nobody@127.0.0.1:1/none"}, c.args...)
			requireFails(t, runZizq(t, "", args...), cmd.ExitUsage, c.msg)
		})
	}
}

// answers counts the answers of a failover's clients that are neither
// what they asked for nor a refusal: a 2xx enqueue without a job, a 2xx
// ack that is not 204.
type answers struct {
	mu  sync.Mutex
	odd []string
}

func (a *answers) add(format string, args ...any) {
	a.mu.Lock()
	a.odd = append(a.odd, fmt.Sprintf(format, args...))
	a.mu.Unlock()
}

// produceAll enqueues through url until ctx ends, recording every 201 in
// l and any other 2xx in odd.
func produceAll(ctx context.Context, url string, l *ledger, odd *answers) {
	for i := 0; ctx.Err() == nil; i++ {
		status, data, err := tryDo("POST", url+"/jobs", map[string]any{"type": "t", "queue": "plain", "payload": i})
		var j api.Job
		switch {
		case err != nil || status/100 != 2:
		case status == http.StatusCreated && json.Unmarshal(data, &j) == nil && j.ID != "":
			l.add(l.enqueued, j.ID)
		default:
			odd.add("enqueue through %s answered %d %q", url, status, data)
		}
	}
}

// TestFailover_FrozenLeaderTenSeconds stops the leader of three servers
// for 10 s (SIGSTOP, then SIGCONT) under load: a producer and a worker on
// every node, the frozen leader's included. Every enqueue answered 201 is
// still there after the drain unless an ack of it was sent (an ack the old
// or the new leader applied, whose answer the failover cut); no 2xx is
// anything but the answer asked for; no job acknowledged with 204 is
// delivered again or still there.
func TestFailover_FrozenLeaderTenSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s freeze")
	}
	dsn := pgtest.Schema(t)
	ps := make([]*proc, 3)
	for i := range ps {
		ps[i] = startServer(t, "--database-url", dsn, "--lease", failoverLease)
	}
	lead, term := leaderOf(t, ps, 0, 20*time.Second)
	l := &ledger{enqueued: map[string]bool{}, acking: map[string]bool{}, acked: map[string]bool{}}
	odd := &answers{}
	// A job read after its ack was answered 204 is a frame the stopped
	// leader had sent (or prepared) before it stopped, which its worker
	// read late: it may run twice. A stream opened once the next leader
	// leads must never deliver one.
	var redelivered, stale sync.Map
	var failedOver atomic.Int64 // unix ns: when the next leader was known
	again := func(id string, opened time.Time) {
		if at := failedOver.Load(); at != 0 && opened.UnixNano() > at {
			redelivered.Store(id, true)
		} else {
			stale.Store(id, true)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(2)
		go func() { defer wg.Done(); produceAll(ctx, p.url, l, odd) }()
		go func() { defer wg.Done(); consumeAgain(ctx, p.url, "plain", l, again) }()
	}
	time.Sleep(1500 * time.Millisecond)

	old := ps[lead]
	require.NoError(t, old.cmd.Process.Signal(syscall.SIGSTOP))
	stopped := time.Now()
	others := append(append([]*proc{}, ps[:lead]...), ps[lead+1:]...)
	next, nextTerm := leaderOf(t, others, term, 15*time.Second)
	failedOver.Store(time.Now().UnixNano())
	t.Logf("%s leads at term %d %s after the leader was stopped", others[next].url, nextTerm, time.Since(stopped).Round(time.Millisecond))
	time.Sleep(time.Until(stopped.Add(10 * time.Second)))
	require.NoError(t, old.cmd.Process.Signal(syscall.SIGCONT))
	var last string
	require.Eventually(t, func() bool {
		status, data, err := tryDo("GET", old.url+"/stats", nil)
		last = fmt.Sprintf("%d %.300s %v", status, data, err)
		var st api.Stats
		return err == nil && json.Unmarshal(data, &st) == nil && st.Role == "follower" && st.Term == nextTerm
	}, 15*time.Second, 50*time.Millisecond, "the resumed leader steps down and follows; its /stats: %s", &last)
	time.Sleep(time.Second) // load through all three
	cancel()
	wg.Wait()
	require.NotEmpty(t, l.enqueued)
	require.NotEmpty(t, l.acked)

	require.Empty(t, odd.odd, "a 2xx that is not the answer asked for")
	redelivered.Range(func(id, _ any) bool {
		t.Errorf("job %s was delivered again after its ack was answered 204, by a stream opened after the failover", id)
		return true
	})
	staleReads := 0
	stale.Range(func(any, any) bool { staleReads++; return true })
	leader := others[next].url
	jobs := allJobs(t, leader)
	l.requireNoneCameBack(t, jobs)
	unanswered := 0
	for id := range l.enqueued {
		if _, ok := jobs[id]; ok || l.acked[id] {
			continue
		}
		require.True(t, l.acking[id], "enqueue %s answered 201 is lost: no ack of it was sent", id)
		// An ack sent, not answered 204, and the job gone: the ack was
		// applied and its answer lost. Sent again, it finds no job.
		status, data := do(t, "POST", leader+"/jobs/"+id+"/success", nil)
		require.Equal(t, http.StatusNotFound, status, "%s", data)
		unanswered++
	}
	t.Logf("%d enqueues answered 201, %d acks answered 204, %d acks applied whose answer the failover cut, %d jobs read from the stopped leader's frames after another worker's ack",
		len(l.enqueued), len(l.acked), unanswered, staleReads)
}
