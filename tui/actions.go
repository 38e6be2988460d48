package tui

import (
	"context"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/zizq/zizq/api"
)

// action is what a key does to the selected row of the visible tab. The
// actions table below is the one place to add one: pausing a budget goes
// there, on the Budgets tab, once budgets can be paused (issue 16).
type action struct {
	key func(keyMap) key.Binding
	// plan says what the action would do to the selected row; ok is false
	// where it does not apply.
	plan func(m *Model) (p plan, ok bool)
}

// plan is one action about to run: ask, when set, waits for a "y" first.
type plan struct {
	ask  string
	done string // said once it succeeded
	run  func(ctx context.Context) error
}

var actions = []action{
	{key: func(k keyMap) key.Binding { return k.Delete }, plan: (*Model).planDelete},
	{key: func(k keyMap) key.Binding { return k.Pause }, plan: (*Model).planPauseCron},
}

// actionMsg is the end of an action.
type actionMsg struct {
	done string
	err  error
}

// planDelete deletes the selected job: over the event stream when it is
// up (the removal comes back as an event), else with the API.
func (m *Model) planDelete() (plan, bool) {
	j, ok := m.selectedJob()
	if !ok {
		return plan{}, false
	}
	p := plan{ask: "delete job " + j.ID + "?", done: "deleted job " + j.ID}
	if m.live() {
		s := m.push.stream
		p.run = func(ctx context.Context) error {
			return s.Send(ctx, api.ClientFrame{Type: api.ClientDeleteJob, ID: j.ID})
		}
	} else {
		src := m.src
		p.run = func(ctx context.Context) error { return src.DeleteJob(ctx, j.ID) }
	}
	return p, true
}

// planPauseCron pauses the selected cron group or entry, or resumes it if
// paused.
func (m *Model) planPauseCron() (plan, bool) {
	if m.tab != tabCrons {
		return plan{}, false
	}
	if group, e, ok := m.selectedEntry(); ok {
		src, paused := m.src, !e.Paused
		done := "resumed cron entry " + group + "/" + e.Name
		if paused {
			done = "paused cron entry " + group + "/" + e.Name
		}
		return plan{done: done, run: func(ctx context.Context) error { return src.PauseCronEntry(ctx, group, e.Name, paused) }}, true
	}
	g, ok := m.selectedCron()
	if !ok {
		return plan{}, false
	}
	src, paused := m.src, !g.Paused
	done := "resumed cron group " + g.Name
	if paused {
		done = "paused cron group " + g.Name
	}
	return plan{done: done, run: func(ctx context.Context) error { return src.PauseCronGroup(ctx, g.Name, paused) }}, true
}

// startAction runs the action of a key, or asks first; ok is false when no
// action has that key here.
func (m *Model) startAction(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	for _, a := range actions {
		if !key.Matches(msg, a.key(m.keys)) {
			continue
		}
		p, ok := a.plan(m)
		if !ok {
			return nil, true
		}
		if p.ask != "" {
			m.asking = &p
			return nil, true
		}
		return m.runPlan(p), true
	}
	return nil, false
}

// answer takes the key pressed at a question: "y" runs the action, any
// other key drops it.
func (m *Model) answer(msg tea.KeyPressMsg) tea.Cmd {
	p := *m.asking
	m.asking = nil
	if !key.Matches(msg, m.keys.Yes) {
		m.notice = "cancelled"
		return nil
	}
	return m.runPlan(p)
}

func (m *Model) runPlan(p plan) tea.Cmd {
	ctx, timeout := m.ctx, m.timeout()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return actionMsg{done: p.done, err: p.run(ctx)}
	}
}

func (m *Model) applyAction(msg actionMsg) tea.Cmd {
	if msg.err != nil {
		m.notice = "failed: " + oneLine(msg.err)
	} else {
		m.notice = msg.done
	}
	return m.fetch(false) // the stats (and, when polling, the lists) show it
}
