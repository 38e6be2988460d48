package tui

import (
	"cmp"
	"context"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/zizq/zizq/api"
)

// The job lists and the budgets come pushed by the admin port's event
// stream when there is one (Options.Dial): the server sends a window of
// each list, then what enters and leaves it, so a job shows up as soon as
// it is enqueued, not at the next poll. The stats (queues, crons, parked
// counts) are still polled. Moving the cursor past either end of a window
// asks for another window of the same list (an offset, head or tail
// anchor), so a list of any length scrolls. While the stream is down the
// dashboard polls the API, says so in its header, and dials again.

// pushMode is the state of the event stream.
type pushMode int

const (
	pushOff     pushMode = iota // no admin port: polling only
	pushDialing                 // the first dial has not answered yet
	pushOn                      // the lists come from the stream
	pushDown                    // the stream failed: polling until a dial succeeds
)

// push is the dashboard's view of the event stream.
type push struct {
	mode   pushMode
	stream Stream
	err    error // why the stream is down
	// windows are the parts of the lists the server sent, by job status.
	windows map[string]*window
	// pending is where the cursor of a list goes (an absolute position)
	// once the window asked for arrives.
	pending map[string]int
}

// window is a part of one list: jobs from position first on, of total.
type window struct {
	first, total int
	jobs         []api.Job
}

// windowLimit is the size of the windows the dashboard asks for.
const windowLimit = jobLimit

// listOfStatus names the stream's lists by the job status they hold.
var listOfStatus = map[string]string{
	api.StatusReady:     api.ListReady,
	api.StatusInFlight:  api.ListInFlight,
	api.StatusScheduled: api.ListScheduled,
}

// dialMsg is the result of a dial of the event stream.
type dialMsg struct {
	stream Stream
	err    error
}

// frameMsg is one frame of the stream, or the error that ended it.
type frameMsg struct {
	stream Stream
	frame  api.AdminFrame
	err    error
}

// redialMsg asks for another dial of a failed stream.
type redialMsg struct{}

func (m *Model) live() bool { return m.push.mode == pushOn }

// dial returns the command that opens the event stream.
func (m *Model) dial() tea.Cmd {
	dial, ctx := m.opts.Dial, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, minTimeout)
		defer cancel()
		s, err := dial(ctx)
		return dialMsg{stream: s, err: err}
	}
}

// readFrame returns the command that waits for the next frame of s.
func (m *Model) readFrame(s Stream) tea.Cmd {
	ctx := m.ctx
	return func() tea.Msg {
		f, err := s.Next(ctx)
		return frameMsg{stream: s, frame: f, err: err}
	}
}

// send returns the command that sends f on the stream; a failure ends the
// stream as a failed read does.
func (m *Model) send(f api.ClientFrame) tea.Cmd {
	s, ctx := m.push.stream, m.ctx
	return func() tea.Msg {
		if err := s.Send(ctx, f); err != nil {
			return frameMsg{stream: s, err: err}
		}
		return nil
	}
}

func (m *Model) applyDial(msg dialMsg) tea.Cmd {
	if msg.err != nil {
		m.push.mode, m.push.err = pushDown, msg.err
		return tea.Tick(m.opts.RedialEvery, func(time.Time) tea.Msg { return redialMsg{} })
	}
	m.push = push{mode: pushOn, stream: msg.stream, windows: map[string]*window{}, pending: map[string]int{}}
	return m.readFrame(msg.stream) // the server sends a snapshot first
}

func (m *Model) applyFrame(msg frameMsg) tea.Cmd {
	if msg.stream != m.push.stream || m.push.mode != pushOn {
		return nil // a stream already given up
	}
	if msg.err != nil {
		_ = m.push.stream.Close()
		m.push = push{mode: pushDown, err: msg.err}
		// The lists go back to polling: fetch them now, not at the tick.
		return tea.Batch(m.fetch(false), tea.Tick(m.opts.RedialEvery, func(time.Time) tea.Msg { return redialMsg{} }))
	}
	f := msg.frame
	m.now = m.opts.Now()
	m.applyServerStatus(f.Server)
	switch f.Event {
	case api.EventJobSnapshot:
		m.setWindow(api.StatusReady, f.Ready)
		m.setWindow(api.StatusInFlight, f.InFlight)
		m.setWindow(api.StatusScheduled, f.Scheduled)
	case api.EventJobChanged:
		m.applyChange(f)
	case api.EventBudgetSnapshot:
		m.stats.Budgets = f.Budgets
	case api.EventBudgetChanged:
		if f.Budget != nil {
			m.setBudget(*f.Budget)
		}
	case api.EventBudgetRemoved:
		m.stats.Budgets = slices.DeleteFunc(slices.Clone(m.stats.Budgets), func(b api.Budget) bool { return b.Key == f.Key })
	}
	m.rebuild()
	m.placePending(f)
	return m.readFrame(msg.stream)
}

// applyServerStatus takes the job counts of a frame, fresher than the last
// poll's. The stream counts parked jobs as ready; the parked count stays
// the poll's.
func (m *Model) applyServerStatus(s api.ServerStatus) {
	for status, total := range map[string]int{
		api.StatusReady: s.TotalReady, api.StatusInFlight: s.TotalInFlight, api.StatusScheduled: s.TotalScheduled,
	} {
		if w := m.push.windows[status]; w != nil {
			w.total = total
		}
	}
	if !m.haveStats {
		return
	}
	j := &m.stats.Jobs
	j.InFlight, j.Scheduled = int64(s.TotalInFlight), int64(s.TotalScheduled)
	j.Ready = max(0, int64(s.TotalReady)-j.Parked)
}

func (m *Model) setWindow(status string, jw *api.JobWindow) {
	if jw == nil {
		return
	}
	w := &window{first: jw.FirstPosition, total: jw.Total, jobs: make([]api.Job, 0, len(jw.Items))}
	for _, aj := range jw.Items {
		w.jobs = append(w.jobs, jobOf(aj, status))
	}
	m.push.windows[status] = w
	m.jobs[status] = api.JobList{Jobs: w.jobs}
}

// applyChange applies one job_changed to the windows.
func (m *Model) applyChange(f api.AdminFrame) {
	switch f.Status {
	case api.ChangeCompleted, api.ChangeDead:
		m.removeJob(api.StatusInFlight, f.ID)
	case api.ChangeReadyRemoved:
		m.removeJob(api.StatusReady, f.ID)
	case api.ChangeInFlightRemoved:
		m.removeJob(api.StatusInFlight, f.ID)
	case api.ChangeScheduledRemoved:
		m.removeJob(api.StatusScheduled, f.ID)
	case api.ChangeReady, api.ChangeInFlight, api.ChangeScheduled:
		if f.Job != nil {
			m.addJob(f.Status, jobOf(*f.Job, f.Status))
		}
	}
}

func (m *Model) removeJob(status, id string) {
	w := m.push.windows[status]
	if w == nil {
		return
	}
	w.jobs = slices.DeleteFunc(w.jobs, func(j api.Job) bool { return j.ID == id })
	m.jobs[status] = api.JobList{Jobs: w.jobs}
}

// addJob puts a job where the list's order says. The server's ready order
// also has a fair-share tag the stream does not show: a tagged job may sit
// one place off until the next snapshot.
func (m *Model) addJob(status string, j api.Job) {
	w := m.push.windows[status]
	if w == nil {
		return
	}
	w.jobs = slices.DeleteFunc(w.jobs, func(o api.Job) bool { return o.ID == j.ID })
	order := listOrder(status)
	i, _ := slices.BinarySearchFunc(w.jobs, j, order)
	w.jobs = slices.Insert(w.jobs, i, j)
	m.jobs[status] = api.JobList{Jobs: w.jobs}
}

// listOrder is the order of a list as the server keeps it: ready by
// priority then id (the dispatch order), in flight by when it was
// dequeued, scheduled by when it becomes ready.
func listOrder(status string) func(a, b api.Job) int {
	switch status {
	case api.StatusInFlight:
		return func(a, b api.Job) int {
			return cmp.Or(cmp.Compare(a.DequeuedAt, b.DequeuedAt), cmp.Compare(a.ID, b.ID))
		}
	case api.StatusScheduled:
		return func(a, b api.Job) int { return cmp.Or(cmp.Compare(a.ReadyAt, b.ReadyAt), cmp.Compare(a.ID, b.ID)) }
	default:
		return func(a, b api.Job) int { return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.ID, b.ID)) }
	}
}

func (m *Model) setBudget(b api.Budget) {
	bs := slices.Clone(m.stats.Budgets)
	for i := range bs {
		if bs[i].Key == b.Key {
			bs[i] = b
			m.stats.Budgets = bs
			return
		}
	}
	m.stats.Budgets = append(bs, b)
}

// jobOf is a job of the stream as the tables show jobs.
func jobOf(aj api.AdminJob, status string) api.Job {
	return api.Job{
		ID: aj.ID, Type: aj.JobType, Queue: aj.Queue, Priority: aj.Priority, Status: status,
		ReadyAt: uint64(aj.ReadyAt), Attempts: aj.Attempts, DequeuedAt: uint64(aj.DequeuedAt),
		FailedAt: uint64(aj.FailedAt), Budgets: aj.Budgets,
	}
}

// scrollWindow moves to another window of the visible list when a cursor
// key would leave the one shown; ok is false when the table moves alone
// (the key stays inside the window, or the rows are filtered or sorted
// another way than the list, so that positions mean nothing).
func (m *Model) scrollWindow(move func(cursor, visible, total int) (target int, anchor string)) (tea.Cmd, bool) {
	status := m.tab.status()
	w := m.push.windows[status]
	if !m.live() || w == nil || m.filter != "" || m.sortBy != sortList {
		return nil, false
	}
	t := m.tables[m.tab]
	at := w.first + t.cursor
	target, anchor := move(at, t.visible(), w.total)
	target = max(0, min(target, w.total-1))
	if target == at || (target >= w.first && target < w.first+len(w.jobs)) {
		return nil, false
	}
	a := api.ClientAnchor{Kind: anchor}
	if anchor == api.AnchorOffset {
		off := max(0, min(target-windowLimit/2, w.total-windowLimit))
		a.Offset = &off
	}
	m.push.pending[status] = target
	limit := windowLimit
	return m.send(api.ClientFrame{Type: api.ClientSubscribe, List: listOfStatus[status], Anchor: &a, Limit: &limit}), true
}

// placePending puts the cursor where a scroll wanted it once its window
// has come.
func (m *Model) placePending(f api.AdminFrame) {
	if f.Event != api.EventJobSnapshot {
		return
	}
	for status, target := range m.push.pending {
		w := m.push.windows[status]
		if w == nil {
			continue
		}
		for t := range numTabs {
			if t.status() == status {
				m.tables[t].SetCursor(target - w.first)
			}
		}
		delete(m.push.pending, status)
	}
}
