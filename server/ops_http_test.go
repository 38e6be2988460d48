package server_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store/sqlite"
)

// metricValue finds one sample of the Prometheus text exposition by its
// name and labels as written (`zizq_jobs{queue="q",status="ready"}`).
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(text)
	require.NotNil(t, m, "no sample %s in:\n%s", series, text)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

func scrape(t *testing.T, tb *testBundle) string {
	t.Helper()
	r := tb.req(t, "GET", "/metrics", nil, "Accept", "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3")
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	return string(r.body)
}

func TestMetrics_Exposition(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.req(t, "PUT", "/budgets/api", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
	first := tb.enqueue(t, `{"type":"t","queue":"q","payload":1,"budgets":[{"key":"api"}]}`)
	second := tb.enqueue(t, `{"type":"t","queue":"q","payload":2,"budgets":[{"key":"api"}]}`)
	tb.enqueue(t, `{"type":"t","queue":"later","payload":3,"ready_at":`+strconv.FormatUint(msNow()+3_600_000, 10)+`}`)
	doomed := tb.enqueue(t, `{"type":"t","queue":"f","payload":4}`)

	ts := tb.take(t, "queue=q")
	require.Equal(t, first.ID, ts.next(t, 5*time.Second).ID)
	eventually(t, 5*time.Second, func() bool {
		return metricValue(t, scrape(t, tb), `zizq_budget_parked_jobs{budget="api"}`) == 1
	}, "the second job parks behind the budget")
	text := scrape(t, tb)
	require.Equal(t, 1.0, metricValue(t, text, "zizq_ready"))
	require.Equal(t, 1.0, metricValue(t, text, `zizq_jobs{queue="q",status="in_flight"}`))
	require.Equal(t, 1.0, metricValue(t, text, `zizq_jobs{queue="q",status="parked"}`))
	require.Equal(t, 1.0, metricValue(t, text, `zizq_jobs{queue="later",status="scheduled"}`))
	require.Equal(t, 1.0, metricValue(t, text, `zizq_jobs{queue="f",status="ready"}`))
	require.Equal(t, 0.0, metricValue(t, text, `zizq_budget_available_tokens{budget="api"}`))
	require.Equal(t, 1.0, metricValue(t, text, `zizq_budget_held_tokens{budget="api"}`))
	require.Equal(t, 1.0, metricValue(t, text, `zizq_budget_capacity_tokens{budget="api"}`))
	require.Equal(t, 1.0, metricValue(t, text, `zizq_budget_in_flight_jobs{budget="api"}`))
	require.Equal(t, 1.0, metricValue(t, text, `zizq_budget_dispatched_total{budget="api"}`))
	require.Equal(t, 1.0, metricValue(t, text, "zizq_take_connections"))
	require.Positive(t, metricValue(t, text, "zizq_store_database_bytes"))
	require.GreaterOrEqual(t, metricValue(t, text, "zizq_store_queue_depth"), 0.0)
	require.Equal(t, 4.0, metricValue(t, text, "zizq_jobs_enqueued_total"))
	require.Positive(t, metricValue(t, text, "zizq_store_commit_batch_groups_count"))
	require.Positive(t, metricValue(t, text, "zizq_store_commit_duration_seconds_count"))
	require.Contains(t, text, "go_goroutines")
	require.Equal(t, 1.0, metricValue(t, text, "zizq_cluster_leader"), "a lone server leads")
	require.Equal(t, 0.0, metricValue(t, text, "zizq_cluster_term"))

	// The ack lets the parked job go: its wait is observed.
	ackJob(t, tb, first.ID)
	require.Equal(t, second.ID, ts.next(t, 5*time.Second).ID)
	ackJob(t, tb, second.ID)
	fs := tb.take(t, "queue=f")
	require.Equal(t, doomed.ID, fs.next(t, 5*time.Second).ID)
	failJob(t, tb, doomed.ID, `{"message":"m","retry_at":1}`)
	require.Equal(t, doomed.ID, fs.next(t, 5*time.Second).ID)
	failJob(t, tb, doomed.ID, `{"message":"m","kill":true}`)

	text = scrape(t, tb)
	require.Equal(t, 4.0, metricValue(t, text, "zizq_jobs_dispatched_total"))
	require.Equal(t, 2.0, metricValue(t, text, "zizq_jobs_completed_total"))
	require.Equal(t, 1.0, metricValue(t, text, `zizq_job_failures_total{outcome="retry"}`))
	require.Equal(t, 1.0, metricValue(t, text, `zizq_job_failures_total{outcome="dead"}`))
	require.Equal(t, 4.0, metricValue(t, text, "zizq_dispatch_latency_seconds_count"))
	require.Equal(t, 2.0, metricValue(t, text, `zizq_budget_wait_seconds_count{budget="api"}`), "both jobs bound to api")
	require.Equal(t, 0.0, metricValue(t, text, `zizq_budget_parked_jobs{budget="api"}`))

	// A deleted budget's series go (its parked-time histogram at the
	// scrape after the one that finds it gone).
	require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/budgets/api", nil).status)
	require.NotContains(t, scrape(t, tb), `zizq_budget_parked_jobs{budget="api"}`)
	require.NotContains(t, scrape(t, tb), `budget="api"`)

	var st api.Stats
	tb.req(t, "GET", "/stats", nil).json(t, &st)
	require.Positive(t, st.DBBytes)
	require.GreaterOrEqual(t, st.WALBytes, int64(0))
	require.Contains(t, fieldsOf(t, tb.req(t, "GET", "/stats", nil).body), "wal_bytes")
}

func TestRetry_DeadJob(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.req(t, "PUT", "/budgets/b", `{"allocation":2,"strategy":{"type":"while_in_flight"}}`)
	j := tb.enqueue(t, `{"type":"t","queue":"r","payload":{"x":1},"budgets":[{"key":"b"}]}`)
	ts := tb.take(t, "queue=r")
	require.Equal(t, j.ID, ts.next(t, 5*time.Second).ID)
	dead := failJob(t, tb, j.ID, `{"message":"boom","kill":true}`)
	require.Equal(t, "dead", dead.Status)

	r := tb.req(t, "POST", "/jobs/"+j.ID+"/retry", nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var got api.Job
	r.json(t, &got)
	require.Equal(t, "ready", got.Status)
	require.Equal(t, uint32(1), got.Attempts, "attempts are kept")
	require.Zero(t, got.PurgeAt)
	require.NotContains(t, fieldsOf(t, r.body), "payload")
	require.Equal(t, []api.Binding{{Key: "b", Cost: 1}}, got.Budgets)

	// It runs again, and its error history is still there.
	again := ts.next(t, 5*time.Second)
	require.Equal(t, j.ID, again.ID)
	require.JSONEq(t, `{"x":1}`, string(again.Payload))
	require.Equal(t, http.StatusOK, tb.req(t, "GET", "/jobs/"+j.ID+"/errors/1", nil).status)

	// Not dead: 422. Missing: 404.
	r = tb.req(t, "POST", "/jobs/"+j.ID+"/retry", nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Equal(t, "job "+j.ID+" is not dead: it is in_flight", r.errorText(t))
	ackJob(t, tb, j.ID)
	r = tb.req(t, "POST", "/jobs/"+j.ID+"/retry", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "job not found", r.errorText(t))
	done := completedJob(t, tb, "c")
	r = tb.req(t, "POST", "/jobs/"+done.ID+"/retry", nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Equal(t, "job "+done.ID+" is not dead: it is completed", r.errorText(t))

	// A retried job survives a restart as a live job, its purge gone.
	k := inFlightJob(t, tb, `{"type":"t","queue":"s","payload":null}`)
	failJob(t, tb, k.ID, `{"message":"boom","kill":true}`)
	require.Equal(t, http.StatusOK, tb.req(t, "POST", "/jobs/"+k.ID+"/retry", nil).status)
	tb.stop()
	tb = setupIn(t, tb.dir)
	require.Equal(t, "ready", jobByID(t, tb, k.ID).Status)
	require.Zero(t, jobByID(t, tb, k.ID).PurgeAt)
}

// A server restarted with its clock set back keeps handing out IDs that
// sort after every ID it ever gave, even once those jobs are gone.
func TestRestart_IDsIncreaseWhenClockStepsBack(t *testing.T) {
	t.Parallel()
	start := time.Now()
	clk := clock.NewFake(start)
	tb := setup(t, func(o *server.Options) { o.Clock = clk })
	j := inFlightJob(t, tb, `{"type":"t","queue":"q","payload":null}`)
	ackJob(t, tb, j.ID) // completed jobs are not kept: the store is empty
	require.Zero(t, jobCount(t, tb, ""))
	tb.stop()

	for _, back := range []time.Duration{time.Hour, 24 * time.Hour} {
		clk := clock.NewFake(start.Add(-back))
		tb = setupIn(t, tb.dir, func(o *server.Options) { o.Clock = clk })
		k := tb.enqueue(t, `{"type":"t","queue":"q","payload":null}`)
		require.Greater(t, k.ID, j.ID, "clock set back %s", back)
		j = k
		tb.stop()
	}
}

// backupLedger records what clients were told while a backup ran.
type backupLedger struct {
	mu       sync.Mutex
	enqueued map[string]time.Time // 201 received
	ackSent  map[string]time.Time // ack sent
}

func TestBackup_UnderLoadRestoresEverything(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, key := range []string{"api", "hourly"} {
		r := tb.req(t, "PUT", "/budgets/"+key, `{"allocation":1000,"strategy":{"type":"while_in_flight"}}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	}
	l := &backupLedger{enqueued: map[string]time.Time{}, ackSent: map[string]time.Time{}}
	// A backlog nobody takes before the backup: the backup surely holds
	// more jobs than one page of GET /jobs lists.
	for range 3 {
		jobs := strings.Repeat(`{"type":"t","queue":"backlog","payload":null},`, 700)
		r := tb.req(t, "POST", "/jobs/bulk", `{"jobs":[`+strings.TrimSuffix(jobs, ",")+`]}`)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		var out api.BulkJobs
		r.json(t, &out)
		for _, j := range out.Jobs {
			l.enqueued[j.ID] = time.Now()
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	var load sync.WaitGroup
	for w := range 3 { // enqueuers
		load.Add(1)
		go func() {
			defer load.Done()
			for i := 0; ctx.Err() == nil; i++ {
				body := fmt.Sprintf(`{"type":"t","queue":"q%d","payload":{"i":%d,"pad":"%s"},"budgets":[{"key":"api"}]}`, w, i, strings.Repeat("p", 200))
				status, data, err := post(ctx, tb, "/jobs", body)
				if err != nil || status != http.StatusCreated {
					continue
				}
				var j api.Job
				if api.Unmarshal(api.JSON, data, &j) == nil {
					l.mu.Lock()
					l.enqueued[j.ID] = time.Now()
					l.mu.Unlock()
				}
			}
		}()
	}
	ts := tb.take(t, "prefetch=20&queue=q0,q1,q2")
	load.Add(1)
	go func() { // a worker acking what it takes
		defer load.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case f, ok := <-ts.frames:
				if !ok {
					return
				}
				if len(f) == 0 {
					continue
				}
				var j api.Job
				if api.Unmarshal(api.JSON, f, &j) != nil {
					continue
				}
				l.mu.Lock()
				l.ackSent[j.ID] = time.Now()
				l.mu.Unlock()
				_, _, _ = post(ctx, tb, "/jobs/"+j.ID+"/success", "")
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)

	began := time.Now()
	resp, err := tb.h1.Post(tb.admin+"/backup", "", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/gzip", resp.Header.Get("Content-Type"))
	require.Equal(t, `attachment; filename="backup.tar.gz"`, resp.Header.Get("Content-Disposition"))
	archive, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	ended := time.Now()
	time.Sleep(100 * time.Millisecond) // the load goes on after the backup
	stop()
	load.Wait()

	// The archive is a tar.gz holding zizq-root/data/zizq.db.
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	require.NoError(t, err)
	var names []string
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		names = append(names, hdr.Name)
	}
	require.Equal(t, []string{"zizq-root/", "zizq-root/data/", "zizq-root/data/zizq.db"}, names)
	left, _ := filepath.Glob(filepath.Join(tb.dir, ".snapshot-*"))
	require.Empty(t, left)

	// Restore it to a new root and serve it.
	file := filepath.Join(t.TempDir(), "backup.tar.gz")
	require.NoError(t, os.WriteFile(file, archive, 0o600))
	root := filepath.Join(t.TempDir(), "data")
	require.NoError(t, sqlite.Restore(context.Background(), file, root))
	restored := setupIn(t, root, servertest.SQLite) // whichever store made it

	var budgets api.BudgetList
	restored.req(t, "GET", "/budgets", nil).json(t, &budgets)
	require.Len(t, budgets.Budgets, 2, "every budget is there")

	l.mu.Lock()
	defer l.mu.Unlock()
	backedUp := map[string]bool{}
	// The load may have enqueued more than a page holds: follow the pages.
	for next := "/jobs?limit=2000"; next != ""; {
		var page api.JobList
		restored.req(t, "GET", next, nil).json(t, &page)
		for _, j := range page.Jobs {
			backedUp[j.ID] = true
			_, known := l.enqueued[j.ID]
			require.True(t, known || len(l.enqueued) == 0, "job %s was enqueued", j.ID)
			require.Equal(t, "ready", j.Status, "in-flight jobs are recovered to ready")
		}
		next = ""
		if page.Pages.Next != nil {
			next = *page.Pages.Next
		}
	}
	require.NotEmpty(t, backedUp, "the backup holds jobs")
	// Every job enqueued before the backup began and not acked before it
	// ended is in it.
	for id, at := range l.enqueued {
		if at.Before(began) {
			if acked, ok := l.ackSent[id]; !ok || acked.After(ended) {
				require.True(t, backedUp[id], "job %s enqueued before the backup is in it", id)
			}
		}
	}
	// And every one of them is served. The worker acks as it goes: the
	// jobs are bound to a while_in_flight budget of 1000, and the load may
	// have left more than that in the backup.
	rs := restored.take(t, "prefetch=0")
	seen := map[string]bool{}
	for len(seen) < len(backedUp) {
		j := rs.next(t, 10*time.Second)
		require.True(t, backedUp[j.ID])
		seen[j.ID] = true
		require.Equal(t, http.StatusNoContent, restored.req(t, "POST", "/jobs/"+j.ID+"/success", nil).status)
	}
}

func post(ctx context.Context, tb *testBundle, path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", tb.url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := tb.h1.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}
