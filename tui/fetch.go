package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/zizq/zizq/api"
)

const (
	// jobLimit is how many jobs a job tab fetches.
	jobLimit = 200
	// maxBackoff caps the wait between retries while the server is away.
	maxBackoff = 5 * time.Second
	// minTimeout bounds each fetch from below, whatever the refresh rate.
	minTimeout = 2 * time.Second
)

// tickMsg asks for the next poll.
type tickMsg struct{}

// fetchMsg carries the result of one fetch: stats, and the job list of the
// tab that was visible and the "why" of the selected ready job, if any.
type fetchMsg struct {
	seq     uint64
	poll    bool // part of the polling loop: schedule the next tick
	pushed  bool // the lists come from the event stream: not fetched
	err     error
	stats   api.Stats
	status  string // job status fetched, "" if none
	jobs    api.JobList
	parked  api.JobList // with the ready jobs: the parked ones
	jobsErr error
	whyID   string // job explained, "" if none
	why     api.Why
	whyErr  error
}

// whyMsg carries the "why" of one job, fetched when the selection moved.
type whyMsg struct {
	seq uint64
	id  string
	why api.Why
	err error
}

func (m *Model) timeout() time.Duration { return max(minTimeout, m.opts.Refresh) }

// fetch returns the command that reads stats and what the visible tab needs.
// poll marks the fetch of the polling loop, whose result schedules the next.
func (m *Model) fetch(poll bool) tea.Cmd {
	*m.seq++
	var (
		seq     = *m.seq
		ctx     = m.ctx
		src     = m.src
		status  = m.tab.status()
		whyID   = m.whyTarget()
		timeout = m.timeout()
		pushed  = m.live()
	)
	var groups tea.Cmd
	if m.tab == tabCrons {
		groups = m.fetchGroups(m.openedNames())
	}
	return tea.Batch(groups, func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		msg := fetchMsg{seq: seq, poll: poll, pushed: pushed, status: status, whyID: whyID}
		msg.stats, msg.err = src.Stats(ctx)
		if msg.err != nil {
			return msg
		}
		if status != "" && !pushed {
			msg.jobs, msg.jobsErr = src.Jobs(ctx, status, jobLimit)
		}
		// The first jobLimit parked jobs hold every parked one among the
		// first jobLimit ready jobs (both lists are in ID order, and a
		// parked job is ready): one page marks every row of the tab.
		if status == api.StatusReady && msg.jobsErr == nil {
			msg.parked, msg.jobsErr = src.Parked(ctx, jobLimit)
		}
		if whyID != "" {
			msg.why, msg.whyErr = src.Why(ctx, whyID)
		}
		return msg
	})
}

// fetchWhy returns the command that explains the selected ready job, or nil
// when no ready job is selected.
func (m *Model) fetchWhy() tea.Cmd {
	id := m.whyTarget()
	if id == "" {
		return nil
	}
	*m.seq++
	seq, ctx, src, timeout := *m.seq, m.ctx, m.src, m.timeout()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		why, err := src.Why(ctx, id)
		return whyMsg{seq: seq, id: id, why: why, err: err}
	}
}

// tick waits d, then asks for the next poll.
func tick(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{} })
}

// backoff is the wait before retry number failures (1 = first retry).
func backoff(refresh time.Duration, failures int) time.Duration {
	d := refresh
	for i := 1; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, max(maxBackoff, refresh))
}
