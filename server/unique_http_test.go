package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store"
)

// enc is a body encoding of requests and responses.
type enc struct {
	name string
	mp   bool
}

var encodings = []enc{{"JSON", false}, {"MsgPack", true}}

// call sends a request with body v (nil: none) in the encoding.
func (e enc) call(t *testing.T, tb *testBundle, method, path string, v any) reply {
	t.Helper()
	if e.mp {
		return mpReq(t, tb, tb.h1, method, path, v)
	}
	if v == nil {
		return tb.req(t, method, path, nil)
	}
	return tb.req(t, method, path, v)
}

// decode decodes a response body in the encoding.
func (e enc) decode(t *testing.T, r reply, v any) {
	t.Helper()
	if e.mp {
		mpDecode(t, r.body, v)
		return
	}
	r.json(t, v)
}

// fields returns a response's members (as JSON).
func (e enc) fields(t *testing.T, r reply) map[string]json.RawMessage {
	t.Helper()
	if e.mp {
		return mpFields(t, r.body)
	}
	return fieldsOf(t, r.body)
}

// ujob is an enqueue request with a unique key (while "" leaves
// unique_while out).
func ujob(queue, key, while string, extra ...any) map[string]any {
	j := map[string]any{"type": "t", "queue": queue, "payload": map[string]any{"n": 1}, "unique_key": key}
	if while != "" {
		j["unique_while"] = while
	}
	for i := 0; i+1 < len(extra); i += 2 {
		j[extra[i].(string)] = extra[i+1]
	}
	return j
}

// put enqueues one job, requiring the status, and returns it and its
// members.
func (e enc) put(t *testing.T, tb *testBundle, body map[string]any, status int) (api.Job, map[string]json.RawMessage) {
	t.Helper()
	r := e.call(t, tb, "POST", "/jobs", body)
	require.Equal(t, status, r.status, "body: %s", r.body)
	var j api.Job
	e.decode(t, r, &j)
	return j, e.fields(t, r)
}

// created enqueues a job that must be new.
func (e enc) created(t *testing.T, tb *testBundle, body map[string]any) api.Job {
	t.Helper()
	j, f := e.put(t, tb, body, http.StatusCreated)
	require.Equal(t, "false", string(f["duplicate"]))
	return j
}

// dupOf enqueues a job that must be a duplicate of id, and returns the
// existing job as answered.
func (e enc) dupOf(t *testing.T, tb *testBundle, id string, body map[string]any) api.Job {
	t.Helper()
	j, f := e.put(t, tb, body, http.StatusOK)
	require.Equal(t, id, j.ID, "a duplicate answers the existing job")
	require.Equal(t, "true", string(f["duplicate"]))
	require.Equal(t, "false", string(f["folded"]))
	require.NotContains(t, f, "payload")
	return j
}

// keep is a retention of an hour for completed and dead jobs (integers,
// as MessagePack must carry them).
func keep() map[string]any { return map[string]any{"completed_ms": 3_600_000, "dead_ms": 3_600_000} }

func TestUnique_Enqueue(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, e := range encodings {
		t.Run(e.name, func(t *testing.T) {
			q := "enq-" + e.name
			first, f := e.put(t, tb, ujob(q, "k-"+e.name, ""), http.StatusCreated)
			require.Equal(t, "false", string(f["duplicate"]))
			require.Equal(t, "k-"+e.name, first.UniqueKey)
			require.Equal(t, "queued", first.UniqueWhile, "the default scope is materialised")
			require.NotContains(t, f, "payload")

			// Another type, queue and payload: the key is global.
			other := ujob(q+"-other", "k-"+e.name, "exists", "type", "other", "payload", "x", "priority", 3)
			dup := e.dupOf(t, tb, first.ID, other)
			require.Equal(t, "t", dup.Type)
			require.Equal(t, q, dup.Queue)
			require.Equal(t, uint16(api.DefaultPriority), dup.Priority)
			require.Equal(t, "queued", dup.UniqueWhile, "the existing job's scope")
			require.Equal(t, "ready", dup.Status)

			got := jobByID(t, tb, first.ID)
			require.Equal(t, "k-"+e.name, got.UniqueKey)
			require.Equal(t, "queued", got.UniqueWhile)
			require.JSONEq(t, `{"n":1}`, string(got.Payload), "the duplicate changed nothing")
			require.Equal(t, int64(1), jobCount(t, tb, "queue="+q))
			require.Equal(t, int64(0), jobCount(t, tb, "queue="+q+"-other"))

			e.created(t, tb, ujob(q, "other-"+e.name, "active"))
		})
	}
}

// TestUnique_Scopes walks a holder of each scope through each status and
// enqueues the same key in each scope: duplicate (D) or new (-), docs/API.md
// §Unique jobs (the incoming scope against the holder's status, while the
// holder holds under its own). The cases alternate the two encodings.
func TestUnique_Scopes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	want := map[string]map[string]string{
		// incoming:   queued, active, exists
		"queued": {"scheduled": "DDD", "ready": "DDD", "in_flight": "---", "completed": "---", "dead": "---"},
		"active": {"scheduled": "DDD", "ready": "DDD", "in_flight": "-DD", "completed": "---", "dead": "---"},
		"exists": {"scheduled": "DDD", "ready": "DDD", "in_flight": "-DD", "completed": "--D", "dead": "--D"},
	}
	n := 0
	for holderScope, byStatus := range want {
		for status, marks := range byStatus {
			for i, incoming := range []string{"queued", "active", "exists"} {
				e := encodings[n%2]
				n++
				name := fmt.Sprintf("%s/%s/%s", holderScope, status, incoming)
				t.Run(name, func(t *testing.T) {
					q, key := fmt.Sprintf("scope-%d", n), fmt.Sprintf("key-%d", n)
					body := ujob(q, key, holderScope, "retention", keep())
					if status == "scheduled" {
						body["ready_at"] = msNow() + 3_600_000
					}
					h := e.created(t, tb, body)
					if status != "scheduled" && status != "ready" {
						ts := tb.take(t, "prefetch=1&queue="+q)
						require.Equal(t, h.ID, ts.next(t, 5*time.Second).ID)
						switch status {
						case "completed":
							ackJob(t, tb, h.ID)
						case "dead":
							failJob(t, tb, h.ID, `{"message":"x","kill":true}`)
						}
					}
					require.Equal(t, status, jobByID(t, tb, h.ID).Status)
					in := ujob(q+"-in", key, incoming)
					if marks[i] == 'D' {
						got := e.dupOf(t, tb, h.ID, in)
						require.Equal(t, status, got.Status)
					} else {
						require.NotEqual(t, h.ID, e.created(t, tb, in).ID)
					}
				})
			}
		}
	}
}

// A duplicate answers the existing job as GET shows it, without its
// payload, whatever it has been through.
func TestUnique_DuplicateShowsTheJobAsGetDoes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.req(t, "PUT", "/budgets/b", `{"allocation":5,"strategy":{"type":"while_in_flight"}}`)
	for _, e := range encodings {
		t.Run(e.name, func(t *testing.T) {
			q := "show-" + e.name
			h := e.created(t, tb, ujob(q, "show-"+e.name, "active", "priority", 9, "retry_limit", 3,
				"backoff", map[string]any{"exponent": 2, "base_ms": 10, "jitter_ms": 0}, "retention", keep(),
				"budgets", []any{map[string]any{"key": "b", "cost": 2}}))
			ts := tb.take(t, "prefetch=1&queue="+q)
			require.Equal(t, h.ID, ts.next(t, 5*time.Second).ID)
			failJob(t, tb, h.ID, fmt.Sprintf(`{"message":"later","retry_at":%d}`, msNow()+3_600_000))

			want := jobByID(t, tb, h.ID)
			require.Equal(t, "scheduled", want.Status)
			require.NotZero(t, want.DequeuedAt)
			require.NotZero(t, want.FailedAt)
			want.Payload = nil
			yes, no := true, false
			want.Duplicate, want.Folded = &yes, &no
			got := e.dupOf(t, tb, h.ID, ujob(q, "show-"+e.name, "queued"))
			require.Equal(t, want, got)
		})
	}
}

func TestUnique_ReleaseAndReclaim(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	e := encodings[0]

	t.Run("DispatchReleasesQueued", func(t *testing.T) {
		for _, e := range encodings {
			q := "rel-" + e.name
			a := e.created(t, tb, ujob(q, q, "queued"))
			ts := tb.take(t, "prefetch=1&queue="+q)
			require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
			b := e.created(t, tb, ujob(q, q, "queued"))
			e.dupOf(t, tb, b.ID, ujob(q, q, "exists"))
		}
	})

	t.Run("BackoffReclaims", func(t *testing.T) {
		for _, e := range encodings {
			q := "backoff-" + e.name
			a := e.created(t, tb, ujob(q, q, ""))
			ts := tb.take(t, "prefetch=1&queue="+q)
			require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
			r := e.call(t, tb, "POST", "/jobs/"+a.ID+"/failure", map[string]any{"message": "x", "retry_at": msNow() + 3_600_000})
			require.Equal(t, http.StatusOK, r.status)
			var failed api.Job
			e.decode(t, r, &failed)
			require.Equal(t, "scheduled", failed.Status)
			require.Equal(t, q, failed.UniqueKey, "failure responses carry the key")
			require.Equal(t, "queued", failed.UniqueWhile)
			e.dupOf(t, tb, a.ID, ujob(q, q, ""))
		}
	})

	t.Run("BackoffLeavesATakenKey", func(t *testing.T) {
		q := "taken"
		a := e.created(t, tb, ujob(q, q, ""))
		ts := tb.take(t, "prefetch=1&queue="+q)
		require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
		b := e.created(t, tb, ujob(q+"-b", q, ""))
		failJob(t, tb, a.ID, fmt.Sprintf(`{"message":"x","retry_at":%d}`, msNow()+3_600_000))
		e.dupOf(t, tb, b.ID, ujob(q, q, ""))
	})

	t.Run("DisconnectReclaims", func(t *testing.T) {
		q := "disconnect"
		a := e.created(t, tb, ujob(q, q, ""))
		ts := tb.take(t, "prefetch=1&queue="+q)
		require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
		e.created(t, tb, ujob(q+"-other", "other-"+q, "")) // nothing to do with it
		ts.close()
		eventually(t, 5*time.Second, func() bool { return statusOf(t, tb, a.ID) == "ready" }, "requeued")
		e.dupOf(t, tb, a.ID, ujob(q, q, "")) // docs/API.md §Unique jobs: unlike Zizq
	})

	t.Run("ActiveReleasesWhenFinished", func(t *testing.T) {
		q := "active"
		a := e.created(t, tb, ujob(q, q, "active", "retention", keep()))
		ts := tb.take(t, "prefetch=1&queue="+q)
		require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
		e.dupOf(t, tb, a.ID, ujob(q, q, "active"))
		ackJob(t, tb, a.ID)
		e.created(t, tb, ujob(q+"-next", q, "active"))
	})

	t.Run("LatestClaimantHolds", func(t *testing.T) {
		q := "latest"
		a := e.created(t, tb, ujob(q, q, "exists", "retention", keep()))
		ts := tb.take(t, "prefetch=1&queue="+q)
		require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
		b := e.created(t, tb, ujob(q+"-b", q, "queued")) // a is in flight: not queued
		ackJob(t, tb, a.ID)
		e.dupOf(t, tb, b.ID, ujob(q, q, "exists"))
		tb.req(t, "DELETE", "/jobs/"+b.ID, nil)
		c := e.created(t, tb, ujob(q, q, "exists"))
		require.NotEqual(t, a.ID, c.ID, "a lost the key to b: it holds nothing")
	})

	t.Run("ExistsHoldsUntilDeleted", func(t *testing.T) {
		for _, e := range encodings {
			q := "exists-" + e.name
			a := e.created(t, tb, ujob(q, q, "exists", "retention", keep()))
			ts := tb.take(t, "prefetch=1&queue="+q)
			require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
			ackJob(t, tb, a.ID)
			got := e.dupOf(t, tb, a.ID, ujob(q, q, "exists"))
			require.Equal(t, "completed", got.Status)
			require.NotZero(t, got.CompletedAt)
			require.NotZero(t, got.PurgeAt)
			r := e.call(t, tb, "DELETE", "/jobs?status=completed&queue="+url.QueryEscape(q), nil)
			require.Equal(t, http.StatusOK, r.status)
			e.created(t, tb, ujob(q, q, "exists"))
		}
	})

	t.Run("PatchKeepsTheHolder", func(t *testing.T) {
		for _, e := range encodings {
			q := "patch-" + e.name
			a := e.created(t, tb, ujob(q, q, "", "ready_at", msNow()+3_600_000))
			r := e.call(t, tb, "PATCH", "/jobs/"+a.ID, map[string]any{"ready_at": nil, "queue": q + "-moved", "priority": 1})
			require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
			var patched api.Job
			e.decode(t, r, &patched)
			require.Equal(t, "ready", patched.Status)
			require.Equal(t, q, patched.UniqueKey, "PATCH responses carry the key")
			require.Equal(t, "queued", patched.UniqueWhile)
			e.dupOf(t, tb, a.ID, ujob(q, q, ""))
			r = e.call(t, tb, "PATCH", "/jobs/"+a.ID, map[string]any{"ready_at": msNow() + 3_600_000})
			require.Equal(t, http.StatusOK, r.status)
			e.dupOf(t, tb, a.ID, ujob(q, q, ""))
		}
	})
}

// The holder of an exists key is kept until its purge, which the engine's
// deadline makes exact.
func TestUnique_ExistsUntilPurged(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	e := encodings[1]
	a := e.created(t, tb, ujob("purge", "purge", "exists", "retention", map[string]any{"completed_ms": 300}))
	ts := tb.take(t, "prefetch=1&queue=purge")
	require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
	ackJob(t, tb, a.ID)
	// Either still kept (a duplicate) or purged (a new job): never both.
	eventually(t, 5*time.Second, func() bool {
		r := e.call(t, tb, "POST", "/jobs", ujob("purge-2", "purge", "exists"))
		var j api.Job
		e.decode(t, r, &j)
		if r.status == http.StatusOK {
			require.Equal(t, a.ID, j.ID)
			return false
		}
		require.Equal(t, http.StatusCreated, r.status)
		requireGone(t, tb, a.ID)
		return true
	}, "the purge frees the key")
}

func TestUnique_Bulk(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, e := range encodings {
		t.Run(e.name, func(t *testing.T) {
			k := func(s string) string { return e.name + "-" + s }
			bulk := func(status int, jobs ...map[string]any) []api.Job {
				t.Helper()
				r := e.call(t, tb, "POST", "/jobs/bulk", map[string]any{"jobs": jobs})
				require.Equal(t, status, r.status, "body: %s", r.body)
				var out api.BulkJobs
				e.decode(t, r, &out)
				require.Len(t, out.Jobs, len(jobs))
				return out.Jobs
			}
			plain := map[string]any{"type": "t", "queue": "bulk", "payload": nil}
			got := bulk(http.StatusCreated, ujob("bulk", k("a"), ""), ujob("bulk", k("b"), "active"), ujob("bulk", k("a"), "exists"), plain)
			require.False(t, *got[0].Duplicate)
			require.False(t, *got[1].Duplicate)
			require.True(t, *got[2].Duplicate, "a later item is a duplicate of an earlier one")
			require.Equal(t, got[0].ID, got[2].ID)
			require.Equal(t, "queued", got[2].UniqueWhile)
			require.False(t, *got[3].Duplicate)
			require.Empty(t, got[3].UniqueKey)

			all := bulk(http.StatusOK, ujob("bulk", k("b"), ""), ujob("bulk", k("a"), ""))
			require.Equal(t, []string{got[1].ID, got[0].ID}, idsOf(all), "200 when every item is a duplicate")
			require.True(t, *all[0].Duplicate && *all[1].Duplicate)

			mixed := bulk(http.StatusCreated, ujob("bulk", k("a"), ""), ujob("bulk", k("c"), ""))
			require.True(t, *mixed[0].Duplicate)
			require.False(t, *mixed[1].Duplicate)

			// All or nothing: a refused request claims no key.
			r := e.call(t, tb, "POST", "/jobs/bulk", map[string]any{"jobs": []any{
				ujob("bulk", k("d"), ""), ujob("bulk", k("e"), "", "budgets", []any{map[string]any{"key": "missing"}}),
			}})
			require.Equal(t, http.StatusUnprocessableEntity, r.status)
			e.created(t, tb, ujob("bulk", k("d"), ""))
		})
	}
}

// A duplicate binds nothing: its bindings are not checked and its create_with
// creates no budget (docs/API.md §Binding jobs to budgets).
func TestUnique_DuplicateBindsNothing(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, e := range encodings {
		q := "binds-" + e.name
		a := e.created(t, tb, ujob(q, q, ""))
		got := e.dupOf(t, tb, a.ID, ujob(q, q, "", "budgets", []any{map[string]any{"key": "missing-" + e.name}}))
		require.Empty(t, got.Budgets, "the existing job's bindings")
		e.dupOf(t, tb, a.ID, ujob(q, q, "", "budgets", []any{map[string]any{"key": "made-" + e.name,
			"create_with": map[string]any{"allocation": 1, "strategy": map[string]any{"type": "while_in_flight"}}}}))
		require.Equal(t, http.StatusNotFound, tb.req(t, "GET", "/budgets/made-"+e.name, nil).status)
		// Bad bindings are still 400s: they do not depend on server state.
		r := e.call(t, tb, "POST", "/jobs", ujob(q, q, "", "budgets", []any{map[string]any{"key": "x", "cost": 0}}))
		require.Equal(t, http.StatusBadRequest, r.status)
	}
}

// Every rendering of a job with a key carries unique_key and unique_while:
// GET, listings, take frames (both framings), besides the enqueue, failure
// and PATCH responses tested above.
func TestUnique_EveryRendering(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, `{"type":"t","queue":"render","payload":1,"unique_key":"r1","unique_while":"exists"}`)
	b := tb.enqueue(t, `{"type":"t","queue":"render","payload":2,"unique_key":"r2"}`)
	plain := tb.enqueue(t, `{"type":"t","queue":"render","payload":3}`)
	require.NotContains(t, fieldsOf(t, tb.req(t, "GET", "/jobs/"+plain.ID, nil).body), "unique_key")
	require.NotContains(t, fieldsOf(t, tb.req(t, "GET", "/jobs/"+plain.ID, nil).body), "unique_while")

	for _, e := range encodings {
		r := e.call(t, tb, "GET", "/jobs?queue=render", nil)
		var l api.JobList
		e.decode(t, r, &l)
		require.Len(t, l.Jobs, 3)
		require.Equal(t, []string{"r1", "r2", ""}, []string{l.Jobs[0].UniqueKey, l.Jobs[1].UniqueKey, l.Jobs[2].UniqueKey})
		require.Equal(t, []string{"exists", "queued", ""}, []string{l.Jobs[0].UniqueWhile, l.Jobs[1].UniqueWhile, l.Jobs[2].UniqueWhile})
		r = e.call(t, tb, "GET", "/jobs/"+a.ID, nil)
		f := e.fields(t, r)
		require.Equal(t, `"r1"`, string(f["unique_key"]))
		require.Equal(t, `"exists"`, string(f["unique_while"]))
	}

	nd := tb.take(t, "prefetch=1&queue=render")
	mp := tb.take(t, "prefetch=1&queue=render", "Accept", api.MediaMsgPackStream)
	frames := map[string]api.Job{}
	for _, ts := range []*takeStream{nd, mp} {
		j := ts.next(t, 5*time.Second)
		frames[j.ID] = j
	}
	require.Equal(t, "r1", frames[a.ID].UniqueKey)
	require.Equal(t, "exists", frames[a.ID].UniqueWhile)
	require.Equal(t, "r2", frames[b.ID].UniqueKey)
	require.Equal(t, "queued", frames[b.ID].UniqueWhile)
}

// Restarts keep the index as it was: finished exists holders, holders that
// were in flight, and keys that moved to a later job.
func TestUnique_Restart(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	e := encodings[0]
	done := e.created(t, tb, ujob("rs-done", "rs-done", "exists", "retention", keep()))
	flight := e.created(t, tb, ujob("rs-flight", "rs-flight", "active"))
	lost := e.created(t, tb, ujob("rs-lost", "rs-lost", "active"))
	free := e.created(t, tb, ujob("rs-free", "rs-free", "queued"))
	sched := e.created(t, tb, ujob("rs-sched", "rs-sched", "queued", "ready_at", msNow()+3_600_000))
	for _, j := range []api.Job{done, flight, lost, free} {
		ts := tb.take(t, "prefetch=1&queue="+j.Queue)
		require.Equal(t, j.ID, ts.next(t, 5*time.Second).ID)
	}
	ackJob(t, tb, done.ID)
	winner := e.created(t, tb, ujob("rs-winner", "rs-lost", "queued"))                                 // lost is in flight: not queued
	taker := inFlightJob(t, tb, `{"type":"t","queue":"rs-free-2","payload":1,"unique_key":"rs-free"}`) // free is in flight: released
	ackJob(t, tb, taker.ID)                                                                            // and the key is free again
	tb.stop()

	tb = setupIn(t, tb.dir)
	e.dupOf(t, tb, done.ID, ujob("x", "rs-done", "exists"))
	e.dupOf(t, tb, flight.ID, ujob("x", "rs-flight", "active"))
	e.dupOf(t, tb, winner.ID, ujob("x", "rs-lost", "exists"))
	e.dupOf(t, tb, free.ID, ujob("x", "rs-free", "queued")) // requeued, and its key was free
	e.dupOf(t, tb, sched.ID, ujob("x", "rs-sched", "queued"))
	require.Equal(t, "ready", jobByID(t, tb, lost.ID).Status)
	require.Zero(t, jobCount(t, tb, "queue=x"), "every enqueue after the restart was a duplicate")
}

// A crash leaves jobs in flight; at the restart a queued one takes its key
// back if no job holds it (the first by ID when several could), as Zizq's
// recovery does, and the store learns it.
func TestUnique_RecoveryAfterCrash(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	e := encodings[1]
	first := e.created(t, tb, ujob("crash", "crash-free", ""))
	second := e.created(t, tb, ujob("crash", "crash-other", ""))
	held := e.created(t, tb, ujob("crash", "crash-held", ""))
	holder := e.created(t, tb, ujob("crash", "crash-held-2", ""))
	tb.stop()

	// As a crash would leave it: first, second and held in flight; first
	// and second (same key, below) released theirs, held's key taken by
	// holder.
	db := servertest.OpenStore(t, tb.dir)
	ctx := context.Background()
	now := time.Now().UnixMilli()
	require.NoError(t, db.Append(
		store.DeleteJob(second.ID), store.DeleteJob(holder.ID),
		store.InsertJob(store.Job{ID: second.ID, Type: "t", Queue: "crash", Priority: 1, Status: store.Ready, ReadyAt: now,
			UniqueKey: "crash-free", UniqueWhile: store.UniqueQueued}),
		store.InsertJob(store.Job{ID: holder.ID, Type: "t", Queue: "crash", Priority: 1, Status: store.Ready, ReadyAt: now,
			UniqueKey: "crash-held", UniqueWhile: store.UniqueQueued}),
		store.SetStatus(first.ID, store.InFlight, now), store.SetStatus(second.ID, store.InFlight, now),
		store.SetStatus(held.ID, store.InFlight, now),
		store.ReleaseUniqueKey(first.ID), store.ReleaseUniqueKey(second.ID),
	).Wait(ctx))
	require.NoError(t, db.Close())

	tb = setupIn(t, tb.dir)
	e.dupOf(t, tb, first.ID, ujob("x", "crash-free", ""))
	e.dupOf(t, tb, holder.ID, ujob("x", "crash-held", ""))
	tb.stop()

	db = servertest.OpenStore(t, tb.dir)
	defer db.Close()
	holders := map[string]string{}
	require.NoError(t, db.Load(ctx, store.Loader{Unique: func(u store.UniqueJob) error {
		if u.Holds {
			holders[u.Key] = u.ID
		}
		return nil
	}}))
	require.Equal(t, map[string]string{"crash-free": first.ID, "crash-held": holder.ID}, holders, "the store agrees")
}

// nodeKey builds a key the way zizq-node's uniqueKey(...fields) and
// payloadHasher() do (src/unique-key.ts, src/payload-hasher.ts): the job
// type, ':', and the SHA-256 of the picked fields (every field when none
// are named) streamed as canonical JSON, object keys sorted, each member
// and item followed by ','.
func nodeKey(t *testing.T, typ string, payload map[string]any, fields ...string) string {
	t.Helper()
	var picked any = payload
	if len(fields) > 0 {
		m := map[string]any{}
		for _, f := range fields {
			if v, ok := payload[f]; ok {
				m[f] = v
			}
		}
		picked = m
	}
	h := sha256.New()
	var hash func(v any)
	hash = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			h.Write([]byte("{"))
			for _, k := range slices.Sorted(maps.Keys(v)) {
				kb, _ := json.Marshal(k)
				h.Write(kb)
				h.Write([]byte(":"))
				hash(v[k])
				h.Write([]byte(","))
			}
			h.Write([]byte("}"))
		case []any:
			h.Write([]byte("["))
			for _, item := range v {
				hash(item)
				h.Write([]byte(","))
			}
			h.Write([]byte("]"))
		default:
			b, err := json.Marshal(v)
			require.NoError(t, err)
			h.Write(b)
		}
	}
	hash(picked)
	return typ + ":" + hex.EncodeToString(h.Sum(nil))
}

// The request shapes of zizq-node's unique helpers (client.enqueue with
// uniqueKey: uniqueKey("userId", "action") or payloadHasher(), and
// uniqueWhile), answered as the client reads them: duplicate on the job,
// 200 for a duplicate, the key echoed.
func TestUnique_NodeClientKeys(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	send := func(payload map[string]any, key, while string) reply {
		body := map[string]any{"type": "sendEmail", "queue": "emails", "payload": payload, "unique_key": key}
		if while != "" { // the client sends uniqueWhile only with a key, and only when set
			body["unique_while"] = while
		}
		return tb.req(t, "POST", "/jobs", body)
	}
	p1 := map[string]any{"userId": 42, "action": "notify", "other": "ignored"}
	key := nodeKey(t, "sendEmail", p1, "userId", "action")
	// As node computes it: sha256 of {"action":"notify","userId":42,} in the
	// helper's framing.
	require.Equal(t, "sendEmail:9c37dfda982903ec501fc8cab5fa7eecbdb47e698817ec533627ada13eebac47", key)
	r := send(p1, key, "queued")
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var first api.Job
	r.json(t, &first)
	require.Equal(t, key, first.UniqueKey)

	p2 := map[string]any{"userId": 42, "action": "notify", "other": "different"}
	require.Equal(t, key, nodeKey(t, "sendEmail", p2, "userId", "action"), "fields not picked do not count")
	r = send(p2, nodeKey(t, "sendEmail", p2, "userId", "action"), "queued")
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	f := fieldsOf(t, r.body)
	require.Equal(t, "true", string(f["duplicate"]))
	require.Equal(t, `"`+first.ID+`"`, string(f["id"]))
	require.Equal(t, `"queued"`, string(f["unique_while"]))

	p3 := map[string]any{"userId": 43, "action": "notify"}
	r = send(p3, nodeKey(t, "sendEmail", p3, "userId", "action"), "")
	require.Equal(t, http.StatusCreated, r.status, "another user: another key")

	// payloadHasher(): the whole payload, whatever the key order.
	whole := map[string]any{"outer": map[string]any{"a": 1, "b": []any{1, "x"}}}
	reordered := map[string]any{"outer": map[string]any{"b": []any{1, "x"}, "a": 1}}
	r = send(whole, nodeKey(t, "sendEmail", whole), "exists")
	require.Equal(t, http.StatusCreated, r.status)
	r = send(reordered, nodeKey(t, "sendEmail", reordered), "exists")
	require.Equal(t, http.StatusOK, r.status)

	// enqueueBulk with the same helpers.
	r = tb.req(t, "POST", "/jobs/bulk", map[string]any{"jobs": []any{
		map[string]any{"type": "sendEmail", "queue": "emails", "payload": p1, "unique_key": key, "unique_while": "queued"},
		map[string]any{"type": "sendEmail", "queue": "emails", "payload": p3, "unique_key": nodeKey(t, "sendEmail", p3, "userId", "action")},
	}})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var bulk api.BulkJobs
	r.json(t, &bulk)
	require.True(t, *bulk.Jobs[0].Duplicate && *bulk.Jobs[1].Duplicate)
	require.Equal(t, int64(3), jobCount(t, tb, "queue=emails"))
}

// POST /reset deletes every job: every key is free again.
func TestUnique_ResetFreesKeys(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, e := range encodings {
		a := e.created(t, tb, ujob("reset", "reset-"+e.name, "exists", "retention", keep()))
		e.dupOf(t, tb, a.ID, ujob("reset", "reset-"+e.name, "exists"))
		require.Equal(t, http.StatusNoContent, e.call(t, tb, "POST", "/reset", nil).status)
		require.NotEqual(t, a.ID, e.created(t, tb, ujob("reset", "reset-"+e.name, "exists")).ID)
	}
}
