package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// fakeStream records the frames the dashboard sends; the test hands it
// the server's frames as messages.
type fakeStream struct {
	mu   sync.Mutex
	sent []api.ClientFrame
}

func (s *fakeStream) Next(ctx context.Context) (api.AdminFrame, error) {
	<-ctx.Done()
	return api.AdminFrame{}, ctx.Err()
}

func (s *fakeStream) Send(_ context.Context, f api.ClientFrame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, f)
	return nil
}

func (s *fakeStream) Close() error { return nil }

func (s *fakeStream) frames() []api.ClientFrame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]api.ClientFrame(nil), s.sent...)
}

// readyJobs makes the ready jobs first..first+n-1 of the stream.
func readyJobs(first, n int) []api.AdminJob {
	out := make([]api.AdminJob, n)
	for i := range out {
		out[i] = api.AdminJob{ID: jobID(first + i), Queue: "work", JobType: "t", Priority: 100, ReadyAt: nowMs() - 1000}
	}
	return out
}

func snapshot(ready api.JobWindow) api.AdminFrame {
	return api.AdminFrame{
		Event:  api.EventJobSnapshot,
		Server: api.ServerStatus{TotalReady: ready.Total},
		Ready:  &ready, InFlight: &api.JobWindow{Items: []api.AdminJob{}}, Scheduled: &api.JobWindow{Items: []api.AdminJob{}},
	}
}

// newLiveModel is a dashboard on the Ready tab whose stream is up and has
// sent a window of 200 of total ready jobs.
func newLiveModel(t *testing.T, src *fakeSource, total int) (Model, *fakeStream) {
	t.Helper()
	fs := &fakeStream{}
	opts := testOptions()
	opts.Dial = func(context.Context) (Stream, error) { return fs, nil }
	opts.AdminURL = "http://127.0.0.1:7891"
	m := New(src, opts)
	m = update(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	m = update(t, m, dialMsg{stream: fs})
	m = run(t, m, m.fetch(true))
	m = update(t, m, frameMsg{stream: fs, frame: snapshot(api.JobWindow{Items: readyJobs(0, min(total, 200)), Total: total})})
	next, _ := m.Update(keyMsg("tab"))
	next, _ = next.(Model).Update(keyMsg("tab"))
	next, _ = next.(Model).Update(keyMsg("tab"))
	return next.(Model), fs
}

func TestModel_Update_PushedJobs(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	m, fs := newLiveModel(t, src, 3)
	require.Contains(t, screen(m), "live")
	require.Contains(t, screen(m), jobID(2))

	added := api.AdminJob{ID: jobID(7), Queue: "work", JobType: "pushed", Priority: 1}
	m = update(t, m, frameMsg{stream: fs, frame: api.AdminFrame{Event: api.EventJobChanged, ID: added.ID, Status: api.ChangeReady, Job: &added,
		Server: api.ServerStatus{TotalReady: 4}}})
	require.Equal(t, jobID(7), m.jobs[api.StatusReady].Jobs[0].ID, "priority 1 goes first")
	require.Contains(t, screen(m), "pushed")

	m = update(t, m, frameMsg{stream: fs, frame: api.AdminFrame{Event: api.EventJobChanged, ID: jobID(1), Status: api.ChangeReadyRemoved,
		Server: api.ServerStatus{TotalReady: 3}}})
	require.NotContains(t, screen(m), jobID(1))

	src.calls = nil
	next, cmd := m.Update(tickMsg{})
	run(t, next.(Model), cmd)
	require.NotContains(t, src.calls, "jobs ready", "a live list is not polled")
}

func TestModel_Update_ScrollsWindows(t *testing.T) {
	t.Parallel()
	m, fs := newLiveModel(t, newFakeSource(), 300)
	require.Contains(t, screen(m), "rows 1–200 of 300")

	next, cmd := m.Update(keyMsg("G"))
	m = next.(Model)
	require.NotNil(t, cmd, "the bottom of the list is past the window")
	cmd()
	limit := windowLimit
	require.Equal(t, []api.ClientFrame{{Type: api.ClientSubscribe, List: api.ListReady, Anchor: &api.ClientAnchor{Kind: api.AnchorTail}, Limit: &limit}}, fs.frames())
	m = update(t, m, frameMsg{stream: fs, frame: snapshot(api.JobWindow{Items: readyJobs(100, 200), FirstPosition: 100, Total: 300})})
	r, _ := m.tables[tabReady].Selected()
	require.Equal(t, jobID(299), r.key, "the cursor is on the last job")
	require.Contains(t, screen(m), "rows 101–300 of 300")

	// Up to the window's first row, then one more: the window before it.
	m = press(t, m, "pgup")
	m.tables[tabReady].SetCursor(0)
	next, cmd = m.Update(keyMsg("up"))
	require.NotNil(t, cmd)
	cmd()
	got := fs.frames()[1]
	require.Equal(t, api.AnchorOffset, got.Anchor.Kind)
	require.Equal(t, 0, *got.Anchor.Offset, "position 99 centred, clamped to the head")
	m = update(t, next.(Model), frameMsg{stream: fs, frame: snapshot(api.JobWindow{Items: readyJobs(0, 200), Total: 300})})
	r, _ = m.tables[tabReady].Selected()
	require.Equal(t, jobID(99), r.key)
}

func TestModel_Update_DeleteAsksFirst(t *testing.T) {
	t.Parallel()
	t.Run("Live", func(t *testing.T) {
		t.Parallel()
		m, fs := newLiveModel(t, newFakeSource(), 3)
		m = press(t, m, "d")
		require.Contains(t, screen(m), "delete job "+jobID(0)+"?")
		m = press(t, m, "n")
		require.Contains(t, screen(m), "cancelled")
		require.Empty(t, fs.frames(), "no is no")

		m = press(t, m, "d")
		next, cmd := m.Update(keyMsg("y"))
		require.NotNil(t, cmd)
		m = update(t, next.(Model), cmd())
		require.Equal(t, []api.ClientFrame{{Type: api.ClientDeleteJob, ID: jobID(0)}}, fs.frames())
		require.Contains(t, screen(m), "deleted job "+jobID(0))
	})
	t.Run("Polling", func(t *testing.T) {
		t.Parallel()
		src := newFakeSource()
		m := newTestModel(t, src, 100, 30)
		m = press(t, m, "tab", "tab", "tab", "d")
		src.calls = nil
		next, cmd := m.Update(keyMsg("y"))
		update(t, next.(Model), cmd())
		require.Equal(t, []string{"delete " + jobID(10)}, src.calls)
	})
}

func TestModel_Update_PausesCronGroup(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	m := newTestModel(t, src, 100, 30)
	m = press(t, m, "shift+tab") // Crons
	for _, want := range []string{"pause billing true", "pause maintenance false"} {
		src.calls = nil
		next, cmd := m.Update(keyMsg("p"))
		require.NotNil(t, cmd)
		m = update(t, next.(Model), cmd())
		require.Equal(t, want, src.calls[0])
		m = press(t, m, "j")
	}
}

func TestModel_Update_StreamDownPolls(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	m, fs := newLiveModel(t, src, 3)
	src.calls = nil
	next, cmd := m.Update(frameMsg{stream: fs, err: errors.New("connection reset")})
	m = next.(Model)
	require.NotNil(t, cmd, "a poll of the lists, and a redial later")
	s := screen(m)
	require.Contains(t, s, "polling every 500ms: no event stream at http://127.0.0.1:7891: connection reset")
	m = run(t, m, m.fetch(false))
	require.Contains(t, src.calls, "jobs ready", "the lists are polled again")
	require.Contains(t, screen(m), jobID(10))

	m = update(t, m, dialMsg{stream: fs})
	require.Equal(t, pushOn, m.push.mode)
	require.NotContains(t, screen(m), "no event stream")
}

func TestModel_Update_SortKey(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFakeSource(), 120, 30)
	m = press(t, m, "tab", "tab", "tab")
	for _, by := range []string{"queue", "type", "priority", "attempts"} {
		m = press(t, m, "s")
		require.Contains(t, screen(m), "by "+by)
	}
	m = press(t, m, "s")
	require.NotRegexp(t, `by (queue|type|priority|attempts)`, screen(m), "back to the list's order")
	m = press(t, m, "s") // queue
	var queues []string
	for _, r := range m.tables[tabReady].rows {
		queues = append(queues, r.cells[1])
	}
	require.IsNonDecreasing(t, queues)
}

func TestModel_Update_ScheduledByTimeToReady(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	src.jobs[api.StatusScheduled] = api.JobList{Jobs: []api.Job{
		{ID: jobID(1), Queue: "q", Type: "late", ReadyAt: uint64(nowMs() + 90_000)},
		{ID: jobID(2), Queue: "q", Type: "soon", ReadyAt: uint64(nowMs() + 5_000)},
	}}
	m := newTestModel(t, src, 120, 30)
	m = press(t, m, "tab", "tab", "tab", "tab")
	s := screen(m)
	require.Less(t, strings.Index(s, "soon"), strings.Index(s, "late"), "%s", s)
}

func TestKeyHelp(t *testing.T) {
	t.Parallel()
	h := KeyHelp()
	for _, k := range []string{"d ", "p ", "s ", "q ", "/ ", "y "} {
		require.Contains(t, h, "  "+k, fmt.Sprintf("key %q in %s", k, h))
	}
}

func TestModel_Update_CronEntries(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	m := newTestModel(t, src, 120, 40)
	m = press(t, m, "shift+tab") // Crons, on billing
	src.calls = nil
	next, cmd := m.Update(keyMsg("enter"))
	require.NotNil(t, cmd)
	m = update(t, next.(Model), cmd())
	require.Equal(t, []string{"cron billing"}, src.calls)
	s := screen(m)
	require.Contains(t, s, "└ daily")
	require.Contains(t, s, "└ hourly")

	m = press(t, m, "j") // the entry daily
	require.Contains(t, screen(m), "cron entry billing/daily")
	src.calls = nil
	next, cmd = m.Update(keyMsg("p"))
	require.NotNil(t, cmd)
	m = update(t, next.(Model), cmd())
	require.Equal(t, "pause billing/daily true", src.calls[0])
	require.Contains(t, screen(m), "paused cron entry billing/daily")

	m = press(t, m, "j") // hourly, paused: resumed
	next, cmd = m.Update(keyMsg("p"))
	update(t, next.(Model), cmd())
	require.Contains(t, src.calls, "pause billing/hourly false")

	next, _ = m.Update(keyMsg("enter")) // closes the group
	m = next.(Model)
	require.NotContains(t, screen(m), "└ daily")
	r, _ := m.tables[tabCrons].Selected()
	require.Equal(t, "billing", r.key, "the cursor goes back to the group")
}
