package server_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store/sqlite"
)

// TestStorage_Unavailable makes the store's writer fail as on a full disk
// and on a read-only database: every write answers 503 with the reason,
// reads keep working, a refused enqueue leaves no trace (no job, no budget
// its create_with made), and nothing acknowledged before is lost, through a
// restart too.
func TestStorage_Unavailable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		fault  sqlite.Fault
		reason string
	}{
		{"DiskFull", sqlite.FaultDiskFull, "database or disk is full"},
		{"ReadOnly", sqlite.FaultReadOnly, "attempt to write a readonly database"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, servertest.SQLite) // simulated faults are SQLite's
			r := tb.req(t, "PUT", "/budgets/b", `{"allocation":2,"strategy":{"type":"while_in_flight"}}`)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			kept := tb.enqueue(t, `{"type":"t","queue":"q","payload":{"n":1},"budgets":[{"key":"b"}]}`)
			held := inFlightJob(t, tb, `{"type":"t","queue":"f","payload":null}`)
			done := inFlightJob(t, tb, `{"type":"t","queue":"d","payload":null}`)
			ackJob(t, tb, done.ID)

			servertest.SQLiteDB(t, tb.srv).SimulateFault(c.fault)
			want := `{"error":"storage unavailable: ` + c.reason + `"}`
			for _, w := range []struct{ method, path, body string }{
				{"POST", "/jobs", `{"type":"t","queue":"w","payload":null}`},
				{"POST", "/jobs/bulk", `{"jobs":[{"type":"t","queue":"w","payload":1},{"type":"t","queue":"w","payload":2}]}`},
				{"POST", "/jobs", `{"type":"t","queue":"w","payload":null,"budgets":[{"key":"new","create_with":{"allocation":1,"strategy":{"type":"while_in_flight"}}}]}`},
				{"PUT", "/budgets/c", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`},
				{"POST", "/budgets/c", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`},
				{"PATCH", "/budgets/b", `{"allocation":5}`},
				{"POST", "/jobs/" + held.ID + "/success", ""},
				{"DELETE", "/jobs/" + kept.ID, ""},
			} {
				var body any
				if w.body != "" {
					body = w.body
				}
				r := tb.req(t, w.method, w.path, body)
				require.Equal(t, http.StatusServiceUnavailable, r.status, "%s %s: %s", w.method, w.path, r.body)
				require.Equal(t, want, string(r.body), "%s %s", w.method, w.path)
			}

			// Reads keep working.
			require.Equal(t, "ready", jobByID(t, tb, kept.ID).Status)
			require.Equal(t, int64(2), jobCount(t, tb, ""), "only the jobs acknowledged before the fault")
			require.Zero(t, jobCount(t, tb, "queue=w"), "the refused enqueues left nothing")
			for path, status := range map[string]int{
				"/health": 200, "/stats": 200, "/queues": 200, "/budgets": 200, "/budgets/b": 200,
				"/budgets/new": 404, "/budgets/c": 404, // refused creations left nothing
			} {
				require.Equal(t, status, tb.req(t, "GET", path, nil).status, path)
			}

			// Writes work again once the store does, and no refused job is
			// dispatched.
			servertest.SQLiteDB(t, tb.srv).SimulateFault(sqlite.NoFault)
			after := tb.enqueue(t, `{"type":"t","queue":"w","payload":null}`)
			ts := tb.take(t, "queue=w&prefetch=0")
			require.Equal(t, after.ID, ts.next(t, 5*time.Second).ID)
			ts.none(t, 200*time.Millisecond)
			r = tb.req(t, "POST", "/jobs", `{"type":"t","queue":"x","payload":null,"budgets":[{"key":"new","create_with":{"allocation":1,"strategy":{"type":"while_in_flight"}}}]}`)
			require.Equal(t, http.StatusCreated, r.status, "create_with works again: %s", r.body)

			// Through a restart, everything acknowledged is there: the job
			// whose delete was refused, and the one whose ack was refused,
			// back to ready (it runs again: at-least-once).
			tb.stop()
			tb = setupIn(t, tb.dir, servertest.SQLite)
			require.Equal(t, "ready", jobByID(t, tb, kept.ID).Status)
			require.Equal(t, []api.Binding{{Key: "b", Cost: 1}}, jobByID(t, tb, kept.ID).Budgets)
			require.Equal(t, "ready", jobByID(t, tb, held.ID).Status)
			requireGone(t, tb, done.ID)
			require.Equal(t, int64(1), jobCount(t, tb, "queue=w"))
			var b api.Budget
			tb.req(t, "GET", "/budgets/b", nil).json(t, &b)
			require.Equal(t, int64(2), b.Allocation, "the refused patch did not stick")
			require.Equal(t, http.StatusNotFound, tb.req(t, "GET", "/budgets/c", nil).status)
		})
	}
}

// TestStorage_BulkPatchIsOneCommit: a bulk PATCH /jobs is one commit group,
// so one answer: even with one transaction per group, its patches commit
// together, and a failed commit (a full disk that clears at once) answers
// 503 for all of them, with no count of patched jobs.
func TestStorage_BulkPatchIsOneCommit(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	var failedOps atomic.Int64
	var db atomic.Pointer[sqlite.DB]
	dir := t.TempDir()
	tb := setupIn(t, dir, func(o *server.Options) {
		o.OpenStore = servertest.SQLiteStore(dir, sqlite.Options{BatchSize: 1, OnCommit: func(c sqlite.CommitInfo) {
			if c.Failed && armed.CompareAndSwap(true, false) {
				failedOps.Store(int64(c.Ops))
				db.Load().SimulateFault(sqlite.NoFault)
			}
		}})
	})
	db.Store(servertest.SQLiteDB(t, tb.srv))
	for range 3 {
		tb.enqueue(t, `{"type":"t","queue":"p","payload":null}`)
	}
	armed.Store(true)
	servertest.SQLiteDB(t, tb.srv).SimulateFault(sqlite.FaultDiskFull)

	r := tb.req(t, "PATCH", "/jobs?queue=p", `{"priority":7}`)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	require.Equal(t, `{"error":"storage unavailable: database or disk is full"}`, string(r.body))
	// OnCommit runs once the commit's waiters are woken, so it may come
	// after the answer.
	require.Eventually(t, func() bool { return !armed.Load() }, 10*time.Second, time.Millisecond,
		"the patches' commit failed")
	require.Equal(t, int64(3), failedOps.Load(), "all three patches were in the one failed commit")
}
