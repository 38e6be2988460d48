package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
)

// heartbeats waits for n empty frames, failing after d.
func heartbeats(t *testing.T, ts *takeStream, n int, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for n > 0 {
		select {
		case f, ok := <-ts.frames:
			require.True(t, ok, "take stream closed")
			require.Empty(t, f, "only heartbeats expected")
			n--
		case <-deadline:
			t.Fatalf("%d heartbeats missing after %s", n, d)
		}
	}
}

// sseStream reads a text/event-stream take stream block by block (each
// block is what precedes a blank line).
type sseStream struct {
	resp   *http.Response
	blocks chan string
}

func openSSE(t *testing.T, tb *testBundle, query string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, err := http.NewRequestWithContext(ctx, "GET", tb.url+"/jobs/take?"+query, nil)
	require.NoError(t, err)
	r.Header.Set("Accept", "text/event-stream")
	resp, err := tb.h1.Do(r)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := &sseStream{resp: resp, blocks: make(chan string, 1024)}
	go func() {
		defer close(s.blocks)
		rd := bufio.NewReader(resp.Body)
		var block strings.Builder
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\n" {
				s.blocks <- block.String()
				block.Reset()
				continue
			}
			block.WriteString(line)
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s
}

// next returns the next block that is not a comment (heartbeat).
func (s *sseStream) next(t *testing.T, d time.Duration) string {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case b, ok := <-s.blocks:
			require.True(t, ok, "stream closed")
			if strings.HasPrefix(b, ":") {
				continue
			}
			return b
		case <-deadline:
			t.Fatalf("no event within %s", d)
		}
	}
}

func TestTake_Order(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	x1 := tb.enqueue(t, `{"type":"t","queue":"a","payload":1,"priority":10}`)
	x2 := tb.enqueue(t, `{"type":"t","queue":"b","payload":2,"priority":5}`)
	x3 := tb.enqueue(t, `{"type":"t","queue":"c","payload":3,"priority":10}`)
	x4 := tb.enqueue(t, `{"type":"t","queue":"a","payload":4,"priority":5}`)
	x5 := tb.enqueue(t, `{"type":"t","queue":"b","payload":5,"priority":65535}`)
	x6 := tb.enqueue(t, `{"type":"t","queue":"c","payload":6,"priority":0}`)
	x7 := tb.enqueue(t, `{"type":"t","queue":"a","payload":7}`)

	// One at a time, so each frame is the best job left at that moment.
	ts := tb.take(t, "")
	var got []string
	for range 7 {
		j := ts.next(t, 5*time.Second)
		got = append(got, j.ID)
		ackJob(t, tb, j.ID)
	}
	require.Equal(t, []string{x6.ID, x2.ID, x4.ID, x1.ID, x3.ID, x7.ID, x5.ID}, got, "(priority, id) across queues")
}

func TestTake_QueueFilter(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, `{"type":"t","queue":"a","payload":null,"priority":3}`)
	b := tb.enqueue(t, `{"type":"t","queue":"b","payload":null,"priority":2}`)
	c := tb.enqueue(t, `{"type":"t","queue":"c","payload":null,"priority":1}`)

	ts := tb.take(t, "queue=a,b&prefetch=0")
	require.Equal(t, b.ID, ts.next(t, 5*time.Second).ID)
	require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
	ts.none(t, 300*time.Millisecond)
	require.Equal(t, "ready", jobByID(t, tb, c.ID).Status)

	// New jobs: only those of the stream's queues reach it.
	tb.enqueue(t, `{"type":"t","queue":"c","payload":null}`)
	d := tb.enqueue(t, `{"type":"t","queue":"b","payload":null}`)
	require.Equal(t, d.ID, ts.next(t, 5*time.Second).ID)
	ts.none(t, 200*time.Millisecond)
	require.Equal(t, int64(2), jobCount(t, tb, "status=ready&queue=c"))
}

func TestTake_Prefetch(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	t.Run("DefaultOne", func(t *testing.T) {
		for i := range 3 {
			tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"one","payload":%d}`, i))
		}
		ts := tb.take(t, "queue=one")
		first := ts.next(t, 5*time.Second)
		ts.none(t, 300*time.Millisecond)
		require.Equal(t, int64(1), jobCount(t, tb, "queue=one&status=in_flight"))
		ackJob(t, tb, first.ID)
		second := ts.next(t, 5*time.Second)
		require.NotEqual(t, first.ID, second.ID)
		ts.none(t, 200*time.Millisecond)
	})

	t.Run("Two", func(t *testing.T) {
		for i := range 5 {
			tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"two","payload":%d}`, i))
		}
		ts := tb.take(t, "queue=two&prefetch=2")
		a, b := ts.next(t, 5*time.Second), ts.next(t, 5*time.Second)
		ts.none(t, 300*time.Millisecond)
		require.Equal(t, int64(2), jobCount(t, tb, "queue=two&status=in_flight"))
		require.Equal(t, int64(3), jobCount(t, tb, "queue=two&status=ready"))

		// A failure frees a slot as an ack does.
		failJob(t, tb, a.ID, fmt.Sprintf(`{"message":"m","retry_at":%d}`, msNow()+3_600_000))
		c := ts.next(t, 5*time.Second)
		ts.none(t, 200*time.Millisecond)
		ackJob(t, tb, b.ID)
		ackJob(t, tb, c.ID)
		ts.next(t, 5*time.Second)
		ts.next(t, 5*time.Second)
		ts.none(t, 200*time.Millisecond)
	})

	t.Run("ZeroUnlimited", func(t *testing.T) {
		for i := range 20 {
			tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"all","payload":%d}`, i))
		}
		ts := tb.take(t, "queue=all&prefetch=0")
		for range 20 {
			ts.next(t, 5*time.Second)
		}
		require.Equal(t, int64(20), jobCount(t, tb, "queue=all&status=in_flight"))
	})
}

func TestTake_Heartbeats(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *server.Options) { o.HTTP.HeartbeatInterval = 200 * time.Millisecond })

	t.Run("NDJSON", func(t *testing.T) {
		ts := tb.take(t, "queue=hb")
		heartbeats(t, ts, 2, 5*time.Second)
		j := tb.enqueue(t, `{"type":"t","queue":"hb","payload":null}`)
		require.Equal(t, j.ID, ts.next(t, 5*time.Second).ID)
		heartbeats(t, ts, 1, 5*time.Second) // silence after a job frame
	})

	t.Run("MsgPackStream", func(t *testing.T) {
		ts := tb.take(t, "queue=hbm", "Accept", "application/vnd.zizq.msgpack-stream")
		heartbeats(t, ts, 2, 5*time.Second) // four zero bytes each
	})

	t.Run("SSE", func(t *testing.T) {
		s := openSSE(t, tb, "queue=hbs")
		for range 2 {
			select {
			case b := <-s.blocks:
				require.Equal(t, ": heartbeat\n", b)
			case <-time.After(5 * time.Second):
				t.Fatal("no SSE heartbeat")
			}
		}
	})
}

func TestTake_Formats(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	t.Run("NDJSON", func(t *testing.T) {
		for i, accept := range []string{"", "application/x-ndjson", "application/json", "*/*"} {
			q := fmt.Sprintf("nd%d", i)
			j := tb.enqueue(t, `{"type":"t","queue":"`+q+`","payload":{"b":1,"a":2}}`)
			var ts *takeStream
			if accept == "" {
				ts = tb.take(t, "queue="+q)
			} else {
				ts = tb.take(t, "queue="+q, "Accept", accept)
			}
			require.Equal(t, "application/x-ndjson", ts.resp.Header.Get("Content-Type"), accept)
			var frame []byte
			for len(frame) == 0 {
				select {
				case frame = <-ts.frames:
				case <-time.After(5 * time.Second):
					t.Fatal("no frame")
				}
			}
			f := fieldsOf(t, frame)
			require.Equal(t, `"`+j.ID+`"`, string(f["id"]))
			require.Equal(t, `"in_flight"`, string(f["status"]))
			require.Equal(t, `{"a":2,"b":1}`, string(f["payload"]), "frames carry the payload")
			require.Contains(t, f, "dequeued_at")
			require.NotContains(t, f, "duplicate")
			require.False(t, bytes.Contains(frame, []byte(" ")), "compact JSON: %s", frame)
		}
	})

	t.Run("MsgPackStream", func(t *testing.T) {
		for i, accept := range []string{"application/vnd.zizq.msgpack-stream", "application/msgpack"} {
			q := fmt.Sprintf("mp%d", i)
			before := msNow()
			j := tb.enqueue(t, `{"type":"t","queue":"`+q+`","payload":{"big":18446744073709551615,"s":"x"}}`)
			ts := tb.take(t, "queue="+q, "Accept", accept)
			require.Equal(t, "application/vnd.zizq.msgpack-stream", ts.resp.Header.Get("Content-Type"))
			got, raw := ts.nextFrame(t, 5*time.Second)
			require.Equal(t, j.ID, got.ID)
			require.Equal(t, "in_flight", got.Status)
			require.GreaterOrEqual(t, got.DequeuedAt, before)
			require.Equal(t, `{"big":18446744073709551615,"s":"x"}`, string(got.Payload))
			require.NotContains(t, mpFields(t, raw), "duplicate")
		}
	})

	t.Run("SSE", func(t *testing.T) {
		j := tb.enqueue(t, `{"type":"t","queue":"sse","payload":{"b":1,"a":2}}`)
		s := openSSE(t, tb, "queue=sse")
		require.Equal(t, "text/event-stream", s.resp.Header.Get("Content-Type"))
		b := s.next(t, 5*time.Second)
		require.True(t, strings.HasPrefix(b, "data: {"), "block: %q", b)
		require.Equal(t, 1, strings.Count(b, "\n"), "one data line: %q", b)
		var got api.Job
		require.NoError(t, api.Unmarshal(api.JSON, []byte(strings.TrimPrefix(b, "data: ")), &got))
		require.Equal(t, j.ID, got.ID)
		require.Equal(t, "in_flight", got.Status)
		require.Equal(t, `{"a":2,"b":1}`, string(got.Payload))
		ackJob(t, tb, j.ID)
	})

	t.Run("NotAcceptable", func(t *testing.T) {
		r := tb.req(t, "GET", "/jobs/take", nil, "Accept", "text/html")
		require.Equal(t, http.StatusNotAcceptable, r.status)
		require.Equal(t, `{"error":"not acceptable","supported":["text/event-stream","application/x-ndjson","application/vnd.zizq.msgpack-stream"]}`, string(r.body))
	})

	t.Run("BadQuery", func(t *testing.T) {
		for _, q := range []string{"bogus=1", "prefetch=-1", "prefetch=x", "prefetch=1&prefetch=2", "queues=a"} {
			r := tb.req(t, "GET", "/jobs/take?"+q, nil)
			require.Equal(t, http.StatusBadRequest, r.status, q)
			require.Contains(t, r.errorText(t), "invalid query parameters: ", q)
		}
		r := tb.req(t, "GET", "/jobs/take?bogus=1", nil)
		require.Equal(t, "invalid query parameters: unknown field `bogus`, expected one of `queue`, `prefetch`", r.errorText(t))
		r = tb.req(t, "GET", "/jobs/take?bogus=1", nil, "Accept", "text/html")
		require.Equal(t, http.StatusBadRequest, r.status, "the take query is checked first")
	})
}

func TestTake_DisconnectRequeues(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	other := inFlightJob(t, tb, `{"type":"t","queue":"other","payload":null}`)

	ts := tb.take(t, "queue=dr&prefetch=0")
	x := tb.enqueue(t, `{"type":"t","queue":"dr","payload":null}`)
	got := ts.next(t, 5*time.Second)
	require.Equal(t, x.ID, got.ID)
	require.NotZero(t, got.DequeuedAt)
	require.Equal(t, "in_flight", jobByID(t, tb, x.ID).Status)

	ts.close()
	eventually(t, 5*time.Second, func() bool { return statusOf(t, tb, x.ID) == "ready" }, "job requeued after disconnect")
	// Nobody waits for the status marks of a dispatch and a requeue: they
	// commit in the background (a round trip away on PostgreSQL).
	require.NoError(t, tb.srv.Core().Store().Barrier(context.Background()))
	back := jobByID(t, tb, x.ID)
	require.Zero(t, back.Attempts)
	require.Equal(t, got.DequeuedAt, back.DequeuedAt, "dequeued_at is kept")
	require.Equal(t, x.ReadyAt, back.ReadyAt)
	r := tb.req(t, "GET", "/jobs/"+x.ID+"/errors", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, string(r.body), `{"errors":[],`, "no error record")
	require.Equal(t, "in_flight", jobByID(t, tb, other.ID).Status, "other streams keep their jobs")

	ts = tb.take(t, "queue=dr")
	again := ts.next(t, 5*time.Second)
	require.Equal(t, x.ID, again.ID, "delivered again to a new stream")
	require.GreaterOrEqual(t, again.DequeuedAt, got.DequeuedAt)
	ackJob(t, tb, x.ID)

	t.Run("AttemptsKept", func(t *testing.T) {
		j := tb.enqueue(t, `{"type":"t","queue":"retried","payload":null}`)
		ts := tb.take(t, "queue=retried")
		require.Equal(t, j.ID, ts.next(t, 5*time.Second).ID)
		failJob(t, tb, j.ID, `{"message":"m","retry_at":1}`)
		held := ts.next(t, 5*time.Second)
		require.Equal(t, j.ID, held.ID)
		require.Equal(t, uint32(1), held.Attempts)
		ts.close()
		eventually(t, 5*time.Second, func() bool { return statusOf(t, tb, j.ID) == "ready" }, "retried job requeued")
		back := jobByID(t, tb, j.ID)
		require.Equal(t, uint32(1), back.Attempts)
		require.Equal(t, held.DequeuedAt, back.DequeuedAt)
		r := tb.req(t, "GET", "/jobs/"+j.ID+"/errors", nil)
		var errs api.ErrorList
		r.json(t, &errs)
		require.Len(t, errs.Errors, 1, "a disconnect writes no error record")
	})
}

func TestTake_HTTP2Disconnect(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	j := tb.enqueue(t, `{"type":"t","queue":"h2","payload":null}`)
	ts := takeWith(t, tb, tb.h2, "queue=h2", "Accept", "application/vnd.zizq.msgpack-stream")
	require.Equal(t, "HTTP/2.0", ts.resp.Proto)
	got, _ := ts.nextFrame(t, 5*time.Second)
	require.Equal(t, j.ID, got.ID)
	ts.close()
	eventually(t, 5*time.Second, func() bool { return statusOf(t, tb, j.ID) == "ready" }, "job requeued after h2 stream reset")
	ts = takeWith(t, tb, tb.h2, "queue=h2")
	require.Equal(t, j.ID, ts.next(t, 5*time.Second).ID)
}

func TestTake_WakeUp(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ts := tb.take(t, "queue=idle")
	ts.none(t, 300*time.Millisecond)
	for range 3 {
		j := tb.enqueue(t, `{"type":"t","queue":"idle","payload":null}`)
		// No polling: the enqueue itself wakes the idle stream (well within
		// the 3 s heartbeat a polling loop would hide behind; a wide margin
		// for a loaded machine, since this is not a speed check).
		require.Equal(t, j.ID, ts.next(t, 3*time.Second).ID)
		ackJob(t, tb, j.ID)
	}
}

func TestTake_ScheduledArrivesWhenDue(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	at := msNow() + 1000
	j := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"later","payload":null,"ready_at":%d}`, at))
	require.Equal(t, "scheduled", j.Status)
	ts := tb.take(t, "queue=later")
	ts.none(t, 300*time.Millisecond)
	got := ts.next(t, 5*time.Second)
	require.GreaterOrEqual(t, msNow(), at)
	require.Equal(t, j.ID, got.ID)
	require.Equal(t, at, got.ReadyAt)
	require.GreaterOrEqual(t, got.DequeuedAt, at)

	// Without a taker, a due job becomes ready by itself.
	k := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"nobody","payload":null,"ready_at":%d}`, msNow()+200))
	require.Equal(t, "scheduled", k.Status)
	eventually(t, 5*time.Second, func() bool { return statusOf(t, tb, k.ID) == "ready" }, "scheduled job promoted")
}

func TestTake_WakesOnMoves(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	t.Run("PatchReadyAtNull", func(t *testing.T) {
		j := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"p1","payload":null,"ready_at":%d}`, msNow()+3_600_000))
		ts := tb.take(t, "queue=p1")
		ts.none(t, 200*time.Millisecond)
		r := tb.req(t, "PATCH", "/jobs/"+j.ID, `{"ready_at":null}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Equal(t, j.ID, ts.next(t, 5*time.Second).ID)
	})

	t.Run("PatchQueue", func(t *testing.T) {
		j := tb.enqueue(t, `{"type":"t","queue":"from","payload":null}`)
		ts := tb.take(t, "queue=to")
		ts.none(t, 200*time.Millisecond)
		r := tb.req(t, "PATCH", "/jobs/"+j.ID, `{"queue":"to"}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		got := ts.next(t, 5*time.Second)
		require.Equal(t, j.ID, got.ID)
		require.Equal(t, "to", got.Queue)
	})

	t.Run("PatchPriority", func(t *testing.T) {
		a := tb.enqueue(t, `{"type":"t","queue":"prio","payload":null}`)
		b := tb.enqueue(t, `{"type":"t","queue":"prio","payload":null}`)
		r := tb.req(t, "PATCH", "/jobs/"+b.ID, `{"priority":1}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		ts := tb.take(t, "queue=prio")
		require.Equal(t, b.ID, ts.next(t, 5*time.Second).ID, "the patched priority decides the order")
		ackJob(t, tb, b.ID)
		require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
	})

	t.Run("RequeueToIdleStream", func(t *testing.T) {
		j := tb.enqueue(t, `{"type":"t","queue":"rq","payload":null}`)
		first := tb.take(t, "queue=rq")
		require.Equal(t, j.ID, first.next(t, 5*time.Second).ID)
		second := tb.take(t, "queue=rq")
		second.none(t, 200*time.Millisecond)
		first.close()
		require.Equal(t, j.ID, second.next(t, 5*time.Second).ID, "a requeued job wakes an idle stream")
	})

	t.Run("BulkDeleteInFlight", func(t *testing.T) {
		a := tb.enqueue(t, `{"type":"t","queue":"bd","payload":1}`)
		b := tb.enqueue(t, `{"type":"t","queue":"bd","payload":2}`)
		ts := tb.take(t, "queue=bd")
		require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
		r := tb.req(t, "DELETE", "/jobs?status=in_flight&queue=bd", nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, `{"deleted":1}`, string(r.body))
		require.Equal(t, b.ID, ts.next(t, 5*time.Second).ID, "deleting frees the slot")
		r = tb.req(t, "POST", "/jobs/"+a.ID+"/success", nil)
		require.Equal(t, http.StatusNotFound, r.status)
	})
}
