package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// expiries records what OnExpire reports.
type expiries struct {
	ids  []string
	at   []time.Time
	late []time.Duration
}

// setupDeadlines is setup with OnExpire recorded.
func setupDeadlines(t testing.TB, tune ...func(*Config)) (*testBundle, *expiries) {
	x := &expiries{}
	tune = append(tune, func(c *Config) {
		c.OnExpire = func(id string, at time.Time, late time.Duration) {
			x.ids, x.at, x.late = append(x.ids, id), append(x.at, at), append(x.late, late)
		}
	})
	return setup(t, tune...), x
}

// enqueueBy enqueues a job of s with a start_by of in from now.
func (tb *testBundle) enqueueBy(t testing.TB, s spec, in time.Duration) (string, int64) {
	t.Helper()
	if s.queue == "" {
		s.queue = "q"
	}
	by := tb.clk.Now().Add(in).UnixMilli()
	jobs, w, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: s.queue, Priority: 32768, Payload: []byte("{}"),
		ReadyAt: s.readyAt, Budgets: s.binds, StartBy: by}})
	require.NoError(t, err)
	require.NoError(t, w.Wait(context.Background()))
	require.Equal(t, by, jobs[0].StartBy, "the enqueue answers with its start_by")
	tb.e.Admit([]string{jobs[0].ID})
	return jobs[0].ID, by
}

// deathOps returns the ops journalled since from that record a death by
// deadline of id: its finish and its error record.
func (tb *testBundle) deathOps(from int, id string) (store.FinishOp, store.ErrorRecord, bool) {
	var fin store.FinishOp
	var rec store.ErrorRecord
	var gotFin, gotRec bool
	for _, o := range tb.journal.ops[from:] {
		switch o := o.(type) {
		case store.FinishOp:
			if o.ID == id {
				fin, gotFin = o, true
			}
		case store.AddErrorOp:
			if o.Record.JobID == id {
				rec, gotRec = o.Record, true
			}
		}
	}
	return fin, rec, gotFin && gotRec
}

func (tb *testBundle) expired(t testing.TB, key string) int64 {
	t.Helper()
	v, err := tb.e.Budget(key, true)
	require.NoError(t, err)
	return v.State.Expired
}

func TestDeadline_ParkedJobDiesAtItsStartBy(t *testing.T) {
	t.Parallel()
	tb, x := setupDeadlines(t)
	tb.budget(t, "b", 1, store.WhileInFlight, 0, 0)
	running := tb.enqueue(t, spec{binds: bindings("b", 1)})
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{running}, drainIDs(tk))
	id, by := tb.enqueueBy(t, spec{binds: bindings("b", 1)}, 100*time.Millisecond)
	from := len(tb.journal.ops)

	tb.clk.Advance(99 * time.Millisecond)
	j, live := tb.e.Job(id)
	require.True(t, live, "alive until its start_by")
	require.Equal(t, by, j.StartBy)
	tb.clk.Advance(time.Millisecond)
	_, live = tb.e.Job(id)
	require.False(t, live, "dead at its start_by")

	fin, rec, ok := tb.deathOps(from, id)
	require.True(t, ok, "a finish and an error record: %v", tb.journal.ops[from:])
	require.Equal(t, store.Finish(id, store.Dead, 0, by, 0, by+int64(DefaultConfig().DefaultDeadRetentionMs)), store.Op(fin),
		"dead as of its own time, attempts untouched, kept for its dead retention")
	want := fmt.Sprintf("not started by %s: waiting for budget b", time.UnixMilli(by).UTC().Format(time.RFC3339Nano))
	require.Equal(t, store.ErrorRecord{JobID: id, Attempt: 1, Message: want, FailedAt: by}, rec,
		"the record of the attempt that never started")
	require.Equal(t, int64(1), tb.expired(t, "b"))
	require.Equal(t, []string{id}, x.ids)
	require.Equal(t, []time.Time{time.UnixMilli(by)}, x.at)
	require.Equal(t, []time.Duration{0}, x.late, "the fake clock fires on time")

	// It never reaches a worker afterwards.
	tb.ack(t, running)
	require.Empty(t, drainIDs(tk))
	require.Equal(t, int64(1), tb.expired(t, "b"))
}

func TestDeadline_Reasons(t *testing.T) {
	t.Parallel()
	tb, _ := setupDeadlines(t)
	tb.budget(t, "w1", 1, store.WhileInFlight, 0, 0)
	tb.budget(t, "w2", 1, store.WhileInFlight, 0, 0)
	tb.budget(t, "tb", 1, store.TimeBased, 60_000, 0)
	tk := tb.e.NewTaker([]string{"q"}, 0)
	a := tb.enqueue(t, spec{binds: bindings("w1", 1)})
	b := tb.enqueue(t, spec{binds: bindings("w2", 1, "tb", 1)})
	require.Equal(t, []string{a, b}, drainIDs(tk))

	ms := func(id string) string { return formatMs(id2ms(t, tb, id)) }
	later := tb.clk.Now().Add(time.Hour).UnixMilli()
	both, _ := tb.enqueueBy(t, spec{binds: bindings("w2", 1, "w1", 1)}, time.Second)
	rate, _ := tb.enqueueBy(t, spec{binds: bindings("tb", 1)}, time.Second)
	unserved, _ := tb.enqueueBy(t, spec{queue: "other", binds: bindings("w1", 1)}, time.Second)
	free, _ := tb.enqueueBy(t, spec{queue: "other"}, time.Second)
	scheduled, _ := tb.enqueueBy(t, spec{readyAt: &later, binds: bindings("w1", 1)}, time.Second)
	msgs := map[string]string{}
	for _, id := range []string{both, rate, unserved, free, scheduled} {
		msgs[id] = ms(id)
	}
	from := len(tb.journal.ops)
	tb.clk.Advance(time.Second)
	for id, want := range map[string]string{
		both:      "waiting for budgets w2, w1", // in the job's order, as why lists them
		rate:      "waiting for budget tb",
		unserved:  "waiting for a worker of queue other",
		free:      "waiting for a worker of queue other",
		scheduled: "scheduled for " + formatMs(later),
	} {
		_, rec, ok := tb.deathOps(from, id)
		require.True(t, ok, id)
		require.Equal(t, "not started by "+msgs[id]+": "+want, rec.Message)
	}
	require.Equal(t, int64(1), tb.expired(t, "w2"))
	require.Equal(t, int64(1), tb.expired(t, "w1"), "not the unserved job's, nor the scheduled one's")
	require.Equal(t, int64(1), tb.expired(t, "tb"))

	// Payable, with every worker of its queue busy.
	tb.ack(t, a, b)
	tk.Close()
	busy := tb.e.NewTaker([]string{"q"}, 1)
	first := tb.enqueue(t, spec{})
	require.Equal(t, []string{first}, drainIDs(busy))
	waits, _ := tb.enqueueBy(t, spec{}, time.Second)
	from = len(tb.journal.ops)
	tb.clk.Advance(time.Second)
	_, rec, ok := tb.deathOps(from, waits)
	require.True(t, ok)
	require.Contains(t, rec.Message, ": waiting for a worker of queue q")
}

// id2ms returns a live job's start_by.
func id2ms(t *testing.T, tb *testBundle, id string) int64 {
	t.Helper()
	j, ok := tb.e.Job(id)
	require.True(t, ok)
	require.NotZero(t, j.StartBy)
	return j.StartBy
}

func TestDeadline_DispatchedInTimeLives(t *testing.T) {
	t.Parallel()
	tb, x := setupDeadlines(t)
	tk := tb.e.NewTaker(nil, 0)
	id, _ := tb.enqueueBy(t, spec{}, 100*time.Millisecond)
	require.Equal(t, []string{id}, drainIDs(tk))
	from := len(tb.journal.ops)
	tb.clk.Advance(time.Second)
	j, live := tb.e.Job(id)
	require.True(t, live, "in flight at its start_by: it started in time")
	require.Equal(t, store.InFlight, j.Status)
	require.Empty(t, tb.journal.ops[from:], "nothing journalled")
	require.Empty(t, x.ids)
	tb.ack(t, id)
}

// A job dispatched exactly at its start_by would not have started by it:
// the deadline is handled first, whatever else happens at that instant (a
// refill, a taker with room).
func TestDeadline_ExactlyAtStartBy(t *testing.T) {
	t.Parallel()
	tb, _ := setupDeadlines(t)
	tb.budget(t, "tb", 1, store.TimeBased, 100, 0)
	tk := tb.e.NewTaker(nil, 0)
	first := tb.enqueue(t, spec{binds: bindings("tb", 1)})
	require.Equal(t, []string{first}, drainIDs(tk))
	// The pool refills at +100 ms, the start_by of the second.
	second, _ := tb.enqueueBy(t, spec{binds: bindings("tb", 1)}, 100*time.Millisecond)
	third := tb.enqueue(t, spec{binds: bindings("tb", 1)})
	tb.clk.Advance(100 * time.Millisecond)
	require.Equal(t, []string{third}, drainIDs(tk), "the refill pays the next job instead")
	_, live := tb.e.Job(second)
	require.False(t, live)

	// No taker until the instant of its start_by.
	tk.Close()
	late, _ := tb.enqueueBy(t, spec{queue: "late"}, 50*time.Millisecond)
	tb.clk.Advance(49 * time.Millisecond)
	_, live = tb.e.Job(late)
	require.True(t, live)
	tb.clk.Advance(time.Millisecond)
	tk2 := tb.e.NewTaker([]string{"late"}, 0)
	require.Empty(t, drainIDs(tk2))
}

func TestDeadline_RetryKeepsOnlyAFutureDeadline(t *testing.T) {
	t.Parallel()
	tb, _ := setupDeadlines(t)
	tk := tb.e.NewTaker(nil, 0)
	id, by := tb.enqueueBy(t, spec{queue: "q"}, time.Second)
	require.Equal(t, []string{id}, drainIDs(tk))

	// Failed before its start_by, retried before it: it keeps it, and dies
	// of it when no worker takes it.
	retry := tb.clk.Now().Add(100 * time.Millisecond).UnixMilli()
	tb.clk.Advance(10 * time.Millisecond)
	j, _, err := tb.e.Fail(id, Failure{Message: "boom", RetryAt: &retry})
	require.NoError(t, err)
	require.Equal(t, by, j.StartBy)
	tk.Close()
	from := len(tb.journal.ops)
	tb.clk.Advance(time.Second)
	_, rec, ok := tb.deathOps(from, id)
	require.True(t, ok, "dies of the kept deadline")
	require.Equal(t, uint32(2), rec.Attempt, "after the record of its failure")

	// Failed after its start_by: cleared, durably, and it runs whenever.
	tk = tb.e.NewTaker(nil, 0)
	id2, _ := tb.enqueueBy(t, spec{}, 100*time.Millisecond)
	require.Equal(t, []string{id2}, drainIDs(tk))
	tb.clk.Advance(200 * time.Millisecond)
	from = len(tb.journal.ops)
	retry = tb.clk.Now().Add(time.Hour).UnixMilli()
	j, _, err = tb.e.Fail(id2, Failure{Message: "boom", RetryAt: &retry})
	require.NoError(t, err)
	require.Zero(t, j.StartBy)
	require.Contains(t, tb.journal.ops[from:], store.ClearStartBy(id2))
	tb.clk.Advance(time.Hour)
	require.Equal(t, []string{id2}, drainIDs(tk), "dispatched after its old start_by")

	// Retried to a time past its start_by: it dies, scheduled.
	id3, by3 := tb.enqueueBy(t, spec{}, 100*time.Millisecond)
	require.Equal(t, []string{id3}, drainIDs(tk))
	retry = by3 + 500
	_, _, err = tb.e.Fail(id3, Failure{Message: "boom", RetryAt: &retry})
	require.NoError(t, err)
	from = len(tb.journal.ops)
	tb.clk.Advance(100 * time.Millisecond)
	_, rec, ok = tb.deathOps(from, id3)
	require.True(t, ok)
	require.Equal(t, fmt.Sprintf("not started by %s: scheduled for %s", formatMs(by3), formatMs(retry)), rec.Message)
}

func TestDeadline_DisconnectKeepsOnlyAFutureDeadline(t *testing.T) {
	t.Parallel()
	tb, _ := setupDeadlines(t)
	tk := tb.e.NewTaker(nil, 0)
	soon, bySoon := tb.enqueueBy(t, spec{}, 100*time.Millisecond)
	later, byLater := tb.enqueueBy(t, spec{}, time.Hour)
	require.ElementsMatch(t, []string{soon, later}, drainIDs(tk))
	tb.clk.Advance(time.Second)
	from := len(tb.journal.ops)
	tk.Close()
	require.Contains(t, tb.journal.ops[from:], store.ClearStartBy(soon))
	require.NotContains(t, tb.journal.ops[from:], store.ClearStartBy(later))
	j, _ := tb.e.Job(soon)
	require.Zero(t, j.StartBy, "started in time: its passed start_by no longer holds it (%d)", bySoon)
	j, _ = tb.e.Job(later)
	require.Equal(t, byLater, j.StartBy)
	tb.clk.Advance(time.Hour)
	_, live := tb.e.Job(soon)
	require.True(t, live)
	_, live = tb.e.Job(later)
	require.False(t, live, "waiting at its start_by")
}

func TestDeadline_DeathLetsUniqueKeyGoAndHonoursRetention(t *testing.T) {
	t.Parallel()
	tb, _ := setupDeadlines(t, func(c *Config) { c.DefaultDeadRetentionMs = 0 })
	jobs, _, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Payload: []byte("{}"), UniqueKey: "k", StartWithinMs: 50}})
	require.NoError(t, err)
	id := jobs[0].ID
	require.Equal(t, tb.clk.Now().UnixMilli()+50, jobs[0].StartBy, "start_within_ms counts from the enqueue")
	tb.e.Admit([]string{id})
	from := len(tb.journal.ops)
	tb.clk.Advance(50 * time.Millisecond)
	require.Contains(t, tb.journal.ops[from:], store.DeleteJob(id), "not kept: no dead retention")
	require.Empty(t, tb.holder("k"))
	again, _, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Payload: []byte("{}"), UniqueKey: "k"}})
	require.NoError(t, err)
	require.False(t, again[0].Duplicate, "the key was let go")
}

func TestDeadline_EnqueueRefusesAPastStartBy(t *testing.T) {
	t.Parallel()
	tb, _ := setupDeadlines(t)
	now := tb.clk.Now().UnixMilli()
	for _, by := range []int64{now, now - 1, 1} {
		_, _, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Payload: []byte("{}")},
			{Type: "t", Queue: "q", Payload: []byte("{}"), StartBy: by}})
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, Unprocessable, e.Kind)
		require.Equal(t, 1, e.Item)
		require.Equal(t, "start_by must be in the future: the job would die at once", e.Msg)
	}
	require.Empty(t, tb.journal.ops, "nothing created")
	require.Zero(t, tb.e.JobCount())
}

func TestDeadline_Restore(t *testing.T) {
	t.Parallel()
	const passedWaiting, passedInFlight, passedScheduled, future = "03hbspbwnw9m04mdludj16js1", "03hbspbwnw9m04mdludj16js2",
		"03hbspbwnw9m04mdludj16js3", "03hbspbwnw9m04mdludj16js4"
	tb, x := setupDeadlines(t)
	now := epoch.UnixMilli()
	r := tb.e.Restore()
	for _, lj := range []store.LiveJob{
		{ID: passedWaiting, Status: store.Ready, StartBy: now - 10},
		{ID: passedInFlight, Status: store.InFlight, StartBy: now - 10},
		{ID: passedScheduled, Status: store.Scheduled, ReadyAt: now + 1000, StartBy: now},
		{ID: future, Status: store.Ready, StartBy: now + 100},
	} {
		lj.Queue, lj.Type = "q", "t"
		require.NoError(t, r.Job(lj))
	}
	r.Finish()
	require.ElementsMatch(t, []string{passedWaiting, passedScheduled}, x.ids, "a passed start_by dies at once")
	require.Contains(t, tb.journal.ops, store.ClearStartBy(passedInFlight), "one that started in time is cleared")
	j, live := tb.e.Job(passedInFlight)
	require.True(t, live)
	require.Zero(t, j.StartBy)
	j, _ = tb.e.Job(future)
	require.Equal(t, now+100, j.StartBy)
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{passedInFlight, future}, drainIDs(tk))
}

// A serving restore dispatches while it loads: a job whose start_by passed
// while the server was down dies before a waiting taker can receive it.
func TestDeadline_ServingRestoreNeverDispatchesAPassedJob(t *testing.T) {
	t.Parallel()
	const passed, fine = "03hbspbwnw9m04mdludj16js1", "03hbspbwnw9m04mdludj16js2"
	tb, x := setupDeadlines(t)
	now := epoch.UnixMilli()
	r := tb.e.Restore()
	r.MaxID(fine)
	require.True(t, r.Serve())
	tk := tb.e.NewTaker(nil, 0)
	require.NoError(t, r.Jobs([]store.LiveJob{
		{ID: passed, Queue: "q", Type: "t", Status: store.Ready, StartBy: now - 1},
		{ID: fine, Queue: "q", Type: "t", Status: store.Ready},
	}))
	require.Equal(t, []string{fine}, drainIDs(tk))
	require.Equal(t, []string{passed}, x.ids)
	r.Finish()
}

func TestDeadline_ReadmitClearsAPassedDeadline(t *testing.T) {
	t.Parallel()
	tb, _ := setupDeadlines(t)
	id, by := tb.enqueueBy(t, spec{}, 100*time.Millisecond)
	tb.clk.Advance(100 * time.Millisecond)
	_, live := tb.e.Job(id)
	require.False(t, live)
	dead := store.Job{ID: id, Type: "t", Queue: "q", Priority: 32768, Status: store.Dead, StartBy: by,
		PurgeAt: by + int64(DefaultConfig().DefaultDeadRetentionMs)}
	from := len(tb.journal.ops)
	got, _, err := tb.e.Readmit(dead)
	require.NoError(t, err)
	require.Zero(t, got.StartBy)
	require.Contains(t, tb.journal.ops[from:], store.ClearStartBy(id))
	tb.clk.Advance(time.Hour)
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{id}, drainIDs(tk), "runs again without it")
}

// The heap is lazy, but jobs that finish long before their start_by do not
// make it grow without bound.
func TestDeadline_HeapStaysBounded(t *testing.T) {
	t.Parallel()
	tb, _ := setupDeadlines(t)
	tk := tb.e.NewTaker(nil, 0)
	for range 20_000 {
		id, _ := tb.enqueueBy(t, spec{}, 24*time.Hour)
		require.Equal(t, []string{id}, drainIDs(tk))
		tb.ack(t, id)
	}
	tb.e.mu.Lock()
	n, live := len(tb.e.deadlines.heap.items), len(tb.e.deadlines.startBy)
	tb.e.mu.Unlock()
	require.Zero(t, live)
	require.LessOrEqual(t, n, compactSlack+2)
}
