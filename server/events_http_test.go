package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
)

// eventConn is a real WebSocket client of the admin port's /events.
type eventConn struct {
	t    *testing.T
	c    *websocket.Conn
	ctx  context.Context
	seen []api.AdminFrame
}

func dialEvents(t *testing.T, tb *testBundle) *eventConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, _, err := websocket.Dial(ctx, strings.Replace(tb.admin, "http", "ws", 1)+"/events", nil)
	require.NoError(t, err)
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &eventConn{t: t, c: c, ctx: ctx}
}

// next reads one frame, within 10 seconds.
func (ec *eventConn) next() api.AdminFrame {
	ec.t.Helper()
	ctx, cancel := context.WithTimeout(ec.ctx, 10*time.Second)
	defer cancel()
	typ, data, err := ec.c.Read(ctx)
	require.NoError(ec.t, err)
	require.Equal(ec.t, websocket.MessageText, typ)
	var f api.AdminFrame
	require.NoError(ec.t, json.Unmarshal(data, &f), "%s", data)
	ec.seen = append(ec.seen, f)
	return f
}

// until reads frames until one satisfies ok, and returns it. It gives up
// after a minute even while frames keep coming: heartbeats alone would
// otherwise keep a wait for a frame that never comes going until the test
// binary's own timeout.
func (ec *eventConn) until(what string, ok func(api.AdminFrame) bool) api.AdminFrame {
	ec.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for range 10000 {
		if f := ec.next(); ok(f) {
			return f
		}
		if time.Now().After(deadline) {
			break
		}
	}
	ec.t.Fatalf("never got %s", what)
	return api.AdminFrame{}
}

func (ec *eventConn) event(kind string) api.AdminFrame {
	ec.t.Helper()
	return ec.until(kind, func(f api.AdminFrame) bool { return f.Event == kind })
}

// changed waits for a job_changed of id with status.
func (ec *eventConn) changed(id, status string) api.AdminFrame {
	ec.t.Helper()
	return ec.until(status+" of "+id, func(f api.AdminFrame) bool {
		return f.Event == api.EventJobChanged && f.ID == id && f.Status == status
	})
}

func (ec *eventConn) send(v any) {
	ec.t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		b, err = json.Marshal(v)
		require.NoError(ec.t, err)
	}
	require.NoError(ec.t, ec.c.Write(ec.ctx, websocket.MessageText, b))
}

func itemIDs(w *api.JobWindow) []string {
	out := []string{}
	for _, j := range w.Items {
		out = append(out, j.ID)
	}
	return out
}

func jobIDs(jobs []api.Job) []string {
	out := []string{}
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func (tb *testBundle) enqueueN(t *testing.T, n int, body func(i int) string) []api.Job {
	t.Helper()
	out := make([]api.Job, n)
	for i := range out {
		out[i] = tb.enqueue(t, body(i))
	}
	return out
}

// TestEvents_SnapshotFirst: a connection gets the three windows first, in
// their orders, then the budgets, and every frame carries the totals.
func TestEvents_SnapshotFirst(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	low := tb.enqueue(t, `{"type":"t","queue":"a","priority":9,"payload":1}`)
	high := tb.enqueue(t, `{"type":"t","queue":"b","priority":1,"payload":2}`)
	later := tb.enqueue(t, `{"type":"t","queue":"a","payload":3,"ready_at":`+fmt.Sprint(time.Now().Add(time.Hour).UnixMilli())+`}`)
	soon := tb.enqueue(t, `{"type":"t","queue":"a","payload":4,"ready_at":`+fmt.Sprint(time.Now().Add(time.Minute).UnixMilli())+`}`)

	ec := dialEvents(t, tb)
	f := ec.next()
	require.Equal(t, api.EventJobSnapshot, f.Event)
	require.Equal(t, []string{high.ID, low.ID}, itemIDs(f.Ready), "ready by (priority, id), across queues")
	require.Equal(t, []string{soon.ID, later.ID}, itemIDs(f.Scheduled), "scheduled by ready_at")
	require.Empty(t, f.InFlight.Items)
	require.Equal(t, 2, f.Ready.Total)
	require.Equal(t, api.ServerStatus{Version: server.Version, UptimeMs: f.Server.UptimeMs, Tier: "pro", TotalReady: 2, TotalScheduled: 2}, f.Server)
	j := f.Ready.Items[0]
	require.Equal(t, api.AdminJob{ID: high.ID, Queue: "b", JobType: "t", Priority: 1, ReadyAt: int64(high.ReadyAt)}, j, "no detail by default")
	require.Equal(t, api.EventBudgetSnapshot, ec.next().Event)
}

// TestEvents_Diffs: enqueue, take, ack, failure and delete come as
// job_changed frames: removals of a window, then additions with the job.
func TestEvents_Diffs(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ec := dialEvents(t, tb)
	ec.event(api.EventJobSnapshot)

	a := tb.enqueue(t, `{"type":"t","queue":"q","payload":1}`)
	f := ec.changed(a.ID, api.ChangeReady)
	require.Equal(t, "q", f.Job.Queue)
	require.Equal(t, 1, f.Server.TotalReady)

	ts := tb.take(t, "queue=q&prefetch=1")
	require.Equal(t, a.ID, ts.next(t, 10*time.Second).ID)
	ec.changed(a.ID, api.ChangeReadyRemoved)
	f = ec.changed(a.ID, api.ChangeInFlight)
	require.NotZero(t, f.Job.DequeuedAt)

	r := tb.req(t, "POST", "/jobs/"+a.ID+"/success", nil)
	require.Equal(t, http.StatusNoContent, r.status)
	ec.changed(a.ID, api.ChangeCompleted)
	f = ec.changed(a.ID, api.ChangeInFlightRemoved)
	require.Equal(t, 0, f.Server.TotalInFlight)

	b := tb.enqueue(t, `{"type":"t","queue":"q","payload":2}`)
	require.Equal(t, b.ID, ts.next(t, 10*time.Second).ID)
	ec.changed(b.ID, api.ChangeInFlight)
	r = tb.req(t, "POST", "/jobs/"+b.ID+"/failure", `{"message":"no"}`)
	require.Equal(t, http.StatusOK, r.status)
	ec.changed(b.ID, api.ChangeDead) // every failure says dead, a retry too
	ec.changed(b.ID, api.ChangeInFlightRemoved)
	ec.changed(b.ID, api.ChangeScheduled)

	r = tb.req(t, "DELETE", "/jobs/"+b.ID, nil)
	require.Equal(t, http.StatusNoContent, r.status)
	ec.changed(b.ID, api.ChangeScheduledRemoved)
}

// TestEvents_Anchors: subscribe moves one list's window: head, tail, an
// offset (clamped so the window stays full), around a job (centred) and
// around a job that is gone (each fallback).
func TestEvents_Anchors(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	jobs := tb.enqueueN(t, 30, func(i int) string { return fmt.Sprintf(`{"type":"t","queue":"q","payload":%d}`, i) })
	ids := jobIDs(jobs)
	ec := dialEvents(t, tb)
	ec.event(api.EventJobSnapshot)
	sub := func(anchor map[string]any, limit int) *api.JobWindow {
		ec.send(map[string]any{"type": "subscribe", "list": "ready", "anchor": anchor, "limit": limit})
		return ec.event(api.EventJobSnapshot).Ready
	}
	for _, tc := range []struct {
		name    string
		anchor  map[string]any
		first   int
		want    []string
		anchor2 string
	}{
		{"Head", map[string]any{"kind": "head"}, 0, ids[:5], ""},
		{"Tail", map[string]any{"kind": "tail"}, 25, ids[25:], ""},
		{"Offset", map[string]any{"kind": "offset", "offset": 10}, 10, ids[10:15], ""},
		{"OffsetPastTheEnd", map[string]any{"kind": "offset", "offset": 99}, 25, ids[25:], ""},
		{"Around", map[string]any{"kind": "around", "id": ids[12]}, 10, ids[10:15], ids[12]},
		{"AroundGoneTail", map[string]any{"kind": "around", "id": "0000000000000000000000000", "fallback": "tail"}, 25, ids[25:], ""},
		{"AroundGoneHead", map[string]any{"kind": "around", "id": "0000000000000000000000000", "fallback": "head"}, 0, ids[:5], ""},
		{"AroundGoneNowhere", map[string]any{"kind": "around", "id": "0000000000000000000000000"}, 0, []string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := sub(tc.anchor, 5)
			require.Equal(t, tc.want, itemIDs(w))
			require.Equal(t, tc.first, w.FirstPosition)
			require.Equal(t, 30, w.Total)
			require.Equal(t, tc.anchor2, w.ResolvedAnchor)
		})
	}

	// The anchored window follows the list: the first job leaves, the
	// window at offset 10 shifts by one.
	sub(map[string]any{"kind": "offset", "offset": 10}, 5)
	r := tb.req(t, "DELETE", "/jobs/"+ids[0], nil)
	require.Equal(t, http.StatusNoContent, r.status)
	ec.changed(ids[10], api.ChangeReadyRemoved)
	f := ec.changed(ids[15], api.ChangeReady)
	require.Equal(t, 29, f.Server.TotalReady)
}

// TestEvents_Find: forward and backward from an anchor, from the start and
// the end, locate, and substring queries (values OR, fields AND).
func TestEvents_Find(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	queues := []string{"mail", "audit.create", "billing", "audit.delete"}
	jobs := tb.enqueueN(t, 40, func(i int) string {
		return fmt.Sprintf(`{"type":"kind%d","queue":"%s","payload":%d}`, i%3, queues[i%4], i)
	})
	ec := dialEvents(t, tb)
	ec.event(api.EventJobSnapshot)
	find := func(anchor map[string]any, dir string, query map[string]any) api.AdminFrame {
		ec.send(map[string]any{"type": "find", "list": "ready", "anchor": anchor, "direction": dir, "query": query, "limit": 6})
		return ec.event(api.EventFindResult)
	}
	audit := map[string]any{"queues": []string{"audit"}}
	f := find(map[string]any{"kind": "start"}, "forward", audit)
	require.Equal(t, "ready", f.List)
	require.Equal(t, &api.FindMatch{Position: 1, Found: true}, f.MatchedPosition)
	require.Equal(t, jobs[1].ID, f.Window.ResolvedAnchor)
	require.Equal(t, jobIDs(jobs[0:6]), itemIDs(f.Window))
	require.Equal(t, 40, f.Window.Total)

	f = find(map[string]any{"kind": "job_id", "id": jobs[1].ID}, "forward", audit)
	require.Equal(t, 3, f.MatchedPosition.Position, "the next match after the anchor")
	f = find(map[string]any{"kind": "job_id", "id": jobs[3].ID}, "backward", audit)
	require.Equal(t, 1, f.MatchedPosition.Position)
	f = find(map[string]any{"kind": "end"}, "backward", audit)
	require.Equal(t, 39, f.MatchedPosition.Position)
	require.Equal(t, jobIDs(jobs[34:40]), itemIDs(f.Window), "the window stays full at the end")

	// Fields AND, values OR: audit.delete jobs (i%4 == 3) of kind2 or kind0.
	f = find(map[string]any{"kind": "start"}, "forward", map[string]any{"queues": []string{"delete"}, "types": []string{"kind2", "kind0"}})
	require.Equal(t, 3, f.MatchedPosition.Position) // job 3: audit.delete, kind0

	f = find(map[string]any{"kind": "job_id", "id": jobs[20].ID}, "locate", nil)
	require.Equal(t, 20, f.MatchedPosition.Position)
	for _, tc := range []struct{ name, dir, kind string }{{"StartBackward", "backward", "start"}, {"EndForward", "forward", "end"}} {
		f = find(map[string]any{"kind": tc.kind}, tc.dir, nil)
		require.Nil(t, f.MatchedPosition, tc.name) // null
		require.Empty(t, f.Window.Items, tc.name)
	}
	f = find(map[string]any{"kind": "start"}, "forward", map[string]any{"queues": []string{"nothing"}})
	require.Nil(t, f.MatchedPosition)
	f = find(map[string]any{"kind": "job_id", "id": "0000000000000000000000000"}, "locate", nil)
	require.Nil(t, f.MatchedPosition, "locate of a job not in the list")
}

// TestEvents_DetailLevel: detail mode adds the payload and the job's own
// settings, to snapshots and to additions; leaving it removes them.
func TestEvents_DetailLevel(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, `{"type":"t","queue":"q","payload":{"n":1},"retry_limit":3,"backoff":{"base_ms":10,"exponent":2,"jitter_ms":5}}`)
	ec := dialEvents(t, tb)
	require.Nil(t, ec.event(api.EventJobSnapshot).Ready.Items[0].Payload)

	ec.send(map[string]any{"type": "set_detail_level", "detail": true})
	j := ec.event(api.EventJobSnapshot).Ready.Items[0]
	require.Equal(t, a.ID, j.ID)
	require.JSONEq(t, `{"n":1}`, string(j.Payload))
	require.Equal(t, uint32(3), *j.RetryLimit)
	require.Equal(t, &api.AdminBackoff{BaseMs: 10, Exponent: 2, JitterMs: 5}, j.Backoff)

	b := tb.enqueue(t, `{"type":"t","queue":"q","payload":"two"}`)
	require.JSONEq(t, `"two"`, string(ec.changed(b.ID, api.ChangeReady).Job.Payload))

	ec.send(map[string]any{"type": "set_detail_level", "detail": false})
	j = ec.event(api.EventJobSnapshot).Ready.Items[0]
	require.Nil(t, j.Payload)
	require.Nil(t, j.RetryLimit)
}

// TestEvents_DeleteJob: delete_job has no reply; the job's removal comes as
// an event, and the job is gone.
func TestEvents_DeleteJob(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, `{"type":"t","queue":"q","payload":1}`)
	ec := dialEvents(t, tb)
	ec.event(api.EventJobSnapshot)
	ec.send(map[string]any{"type": "delete_job", "id": a.ID})
	ec.changed(a.ID, api.ChangeReadyRemoved)
	r := tb.req(t, "GET", "/jobs/"+a.ID, nil)
	require.Equal(t, http.StatusNotFound, r.status)
}

// TestEvents_IgnoresUnknownFrames: frames it cannot read, or of a type it
// does not know, are ignored, as Zizq ignores them; the stream goes on.
func TestEvents_IgnoresUnknownFrames(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.enqueue(t, `{"type":"t","queue":"q","payload":1}`)
	ec := dialEvents(t, tb)
	ec.event(api.EventJobSnapshot)
	for _, f := range []string{`not json`, `{"type":"dance"}`, `{"type":"subscribe","list":"nope","anchor":{"kind":"head"},"limit":1}`,
		`{"type":"subscribe","list":"ready","anchor":{"kind":"sideways"},"limit":1}`, `{"type":"find"}`, `[]`, `{}`} {
		ec.send([]byte(f))
	}
	require.NoError(t, ec.c.Write(ec.ctx, websocket.MessageBinary, []byte{1, 2, 3}))
	ec.send(map[string]any{"type": "subscribe", "list": "ready", "anchor": map[string]any{"kind": "head"}, "limit": 1})
	f := ec.event(api.EventJobSnapshot)
	require.Len(t, f.Ready.Items, 1)
	for _, g := range ec.seen[1 : len(ec.seen)-1] {
		require.NotEqual(t, api.EventJobSnapshot, g.Event, "no answer to the frames ignored: %+v", g)
	}
}

// TestEvents_Heartbeat: an idle stream gets heartbeats (the interval is
// injected here; 2s by default) that carry the totals.
func TestEvents_Heartbeat(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *server.Options) { o.HTTP.Events.Heartbeat = 20 * time.Millisecond })
	tb.enqueue(t, `{"type":"t","queue":"q","payload":1}`)
	ec := dialEvents(t, tb)
	f := ec.event(api.EventHeartbeat)
	require.Equal(t, 1, f.Server.TotalReady)
	require.Equal(t, api.EventHeartbeat, ec.event(api.EventHeartbeat).Event, "and again")
}

// TestEvents_Budgets (our extension): budget_snapshot first, then
// budget_changed as a budget's figures move, budget_removed on delete.
func TestEvents_Budgets(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	r := tb.req(t, "PUT", "/budgets/slow", `{"allocation":2,"strategy":{"type":"while_in_flight"}}`)
	require.Equal(t, http.StatusOK, r.status)
	ec := dialEvents(t, tb)
	ec.event(api.EventJobSnapshot)
	f := ec.event(api.EventBudgetSnapshot)
	require.Len(t, f.Budgets, 1)
	require.Equal(t, "slow", f.Budgets[0].Key)
	require.Equal(t, 2.0, f.Budgets[0].State.Available)

	a := tb.enqueue(t, `{"type":"t","queue":"q","payload":1,"budgets":[{"key":"slow"}]}`)
	ts := tb.take(t, "queue=q")
	require.Equal(t, a.ID, ts.next(t, 10*time.Second).ID)
	f = ec.until("slow holding 1", func(f api.AdminFrame) bool {
		return f.Event == api.EventBudgetChanged && f.Budget.State.Held == 1
	})
	require.Equal(t, int64(1), f.Budget.State.InFlight)
	require.Equal(t, 1.0, f.Budget.State.Available)

	r = tb.req(t, "POST", "/jobs/"+a.ID+"/success", nil)
	require.Equal(t, http.StatusNoContent, r.status)
	ec.until("slow released", func(f api.AdminFrame) bool {
		return f.Event == api.EventBudgetChanged && f.Budget.State.Held == 0 && f.Budget.State.Dispatched == 1
	})
	r = tb.req(t, "DELETE", "/budgets/slow", nil)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Equal(t, "slow", ec.event(api.EventBudgetRemoved).Key)
}

// TestEvents_StalledSubscriber: a dashboard that reads nothing for a while
// does not hold dispatch back (a worker works through every job while it
// stalls, with its frames far larger than any socket buffer), and once it
// reads again it has been resynced with a fresh snapshot, which with the
// changes after it shows the drained lists. The resync's snapshot may be
// taken while the worker is still going (the buffer drains into the
// socket before the socket fills again), so the changes after it count.
func TestEvents_StalledSubscriber(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *server.Options) { o.HTTP.Events.Buffer = 8 })
	const n = 300
	big := strings.Repeat("x", 32<<10)
	jobs := tb.enqueueN(t, n, func(i int) string { return fmt.Sprintf(`{"type":"t","queue":"q","payload":"%s%d"}`, big, i) })
	ec := dialEvents(t, tb)
	ec.event(api.EventJobSnapshot)
	ec.send(map[string]any{"type": "set_detail_level", "detail": true})
	// From here on it reads nothing while the jobs go through.
	ts := tb.take(t, "queue=q&prefetch=10")
	for range n {
		j := ts.next(t, 20*time.Second)
		r := tb.req(t, "POST", "/jobs/"+j.ID+"/success", nil)
		require.Equal(t, http.StatusNoContent, r.status)
	}
	require.Equal(t, jobs[n-1].ID, jobs[len(jobs)-1].ID)

	// A frame's totals are those of its update, whose changes may follow
	// it (or be dropped for a resync): the view is drained once what the
	// frames show is empty too.
	stalled := len(ec.seen)
	ec.until("a resynced view of the drained lists", func(f api.AdminFrame) bool {
		listed, resynced := listedAfterLastSnapshot(ec.seen[stalled:])
		return resynced && len(listed) == 0 && f.Server.TotalReady == 0 && f.Server.TotalInFlight == 0
	})
	changes := 0
	for _, g := range ec.seen {
		if g.Event == api.EventJobChanged {
			changes++
		}
	}
	require.Less(t, changes, 2*n, "frames that did not fit were dropped, not queued")
}

// listedAfterLastSnapshot returns the jobs a dashboard shows in its ready
// and in-flight lists after frames: the last job_snapshot among them with
// the job_changed frames after it applied; false when there is none.
func listedAfterLastSnapshot(frames []api.AdminFrame) (map[string]bool, bool) {
	last := -1
	for i, f := range frames {
		if f.Event == api.EventJobSnapshot {
			last = i
		}
	}
	if last < 0 {
		return nil, false
	}
	listed := map[string]bool{}
	for _, id := range itemIDs(frames[last].Ready) {
		listed["ready "+id] = true
	}
	for _, id := range itemIDs(frames[last].InFlight) {
		listed["in_flight "+id] = true
	}
	for _, f := range frames[last+1:] {
		if f.Event != api.EventJobChanged {
			continue
		}
		switch f.Status {
		case "ready", "in_flight":
			listed[f.Status+" "+f.ID] = true
		case "ready_removed", "in_flight_removed":
			delete(listed, strings.TrimSuffix(f.Status, "_removed")+" "+f.ID)
		case "completed", "dead":
			delete(listed, "ready "+f.ID)
			delete(listed, "in_flight "+f.ID)
		}
	}
	return listed, true
}
