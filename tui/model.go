package tui

import (
	"context"
	"errors"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/zizq/zizq/api"
)

// tab is one view of the dashboard.
type tab int

const (
	tabBudgets tab = iota
	tabQueues
	tabInFlight
	tabReady
	tabScheduled
	tabCrons
	numTabs
)

var tabNames = [numTabs]string{"Budgets", "Queues", "In flight", "Ready", "Scheduled", "Crons"}

// status is the job status a job tab lists, "" for the others.
func (t tab) status() string {
	switch t {
	case tabInFlight:
		return api.StatusInFlight
	case tabReady:
		return api.StatusReady
	case tabScheduled:
		return api.StatusScheduled
	}
	return ""
}

// connState is what the dashboard knows of the server.
type connState int

const (
	connConnecting   connState = iota // no answer yet
	connConnected                     // the last fetch succeeded
	connReconnecting                  // the last fetch failed; retrying
)

// Model is the dashboard: a Bubble Tea model whose state is changed only by
// Update. Build it with New.
type Model struct {
	src   Source
	opts  Options
	ctx   context.Context
	keys  keyMap
	st    *styles
	help  help.Model
	input textinput.Model

	width, height int
	tab           tab
	tables        [numTabs]table
	filtering     bool   // the filter is being typed
	filter        string // current filter, matched against keys
	quitting      bool

	// seq numbers fetches so that a late answer never overwrites a newer
	// one. It is shared by the copies of the model (Init has a value
	// receiver) and only touched on the Bubble Tea goroutine.
	seq       *uint64
	now       time.Time
	stats     api.Stats
	haveStats bool
	lastOK    time.Time
	jobs      map[string]api.JobList
	jobsSeq   map[string]uint64
	parked    map[string]bool // IDs of the parked jobs among the ready ones
	why       api.Why
	whyID     string
	whyErr    error
	whySeq    uint64

	conn     connState
	lastErr  error
	failures int
	retryIn  time.Duration

	push   push    // the admin port's event stream
	sortBy sortKey // order of the job tabs' rows
	asking *plan   // an action waiting for its "y"
	notice string  // what the last action did, until the next key
	// opened are the cron groups whose entries the Crons tab lists (nil
	// until the group's first answer).
	opened map[string]*api.CronGroup
	// forecasts and families are what the budgets on screen were last
	// read to say, by key (see budget_extras.go); extrasOn is set once
	// their rounds have started.
	forecasts map[string]forecast
	families  map[string]family
	extrasOn  bool
	// after is the timer of those rounds (a fake one in tests).
	after func(d time.Duration, msg tea.Msg) tea.Cmd
}

// New returns a dashboard that reads from src. Nothing is fetched until the
// model runs (Init starts the polling loop).
func New(src Source, opts Options) Model {
	opts = opts.withDefaults()
	st := new(styles) // filled by restyle below
	keys := defaultKeyMap()

	in := textinput.New()
	in.Prompt = "/"
	in.CharLimit = 100

	m := Model{
		src:     src,
		opts:    opts,
		ctx:     context.Background(),
		keys:    keys,
		st:      st,
		help:    help.New(),
		input:   in,
		width:   80,
		height:  24,
		now:     opts.Now(),
		seq:     new(uint64),
		jobs:    map[string]api.JobList{},
		jobsSeq: map[string]uint64{},
		parked:  map[string]bool{},
		opened:  map[string]*api.CronGroup{},

		forecasts: map[string]forecast{},
		families:  map[string]family{},
		after:     afterTick,
	}
	m.tables[tabBudgets] = newTable(keys, st, "no budgets",
		column{title: "KEY", flex: true, min: 8, room: true},
		column{title: "STRATEGY", drop: 1}, // RATE says it too: "6/1m", "10 max"
		column{title: "RATE", drop: 4},
		column{title: "AVAILABLE", drop: 7},
		column{title: "HELD", right: true, drop: 2},
		column{title: "PARKED", right: true},
		column{title: "DRAINS IN", right: true, drop: 5},
		column{title: "OLDEST", right: true, drop: 3},
		column{title: "NEXT", right: true, drop: 6},
		column{title: "IN FLIGHT", right: true, optional: true},
		column{title: "DISPATCHED", right: true, optional: true},
	)
	m.tables[tabQueues] = newTable(keys, st, "no queues with live jobs",
		column{title: "QUEUE", flex: true, min: 8, room: true},
		column{title: "SCHEDULED", right: true, drop: 2},
		column{title: "READY", right: true, drop: 4},
		column{title: "PARKED", right: true},
		column{title: "IN FLIGHT", right: true, drop: 3},
		column{title: "TOTAL", right: true, drop: 1},
	)
	m.tables[tabCrons] = newTable(keys, st, "no cron groups",
		column{title: "GROUP", flex: true, min: 8, room: true},
		column{title: "STATE"},
		column{title: "ENTRIES", right: true, drop: 2},
		column{title: "PAUSED", right: true, drop: 1},
		column{title: "NEXT RUN", right: true},
		column{title: "NEXT ENTRY", flex: true, min: 6, drop: 3},
		column{title: "LAST RUN", right: true, optional: true},
	)
	for _, t := range []tab{tabInFlight, tabReady, tabScheduled} {
		age := map[tab]string{tabInFlight: "RUNNING", tabReady: "WAITING", tabScheduled: "READY IN"}[t]
		empty := map[tab]string{tabInFlight: "no jobs in flight", tabReady: "no ready or parked jobs", tabScheduled: "no scheduled jobs"}[t]
		cols := []column{
			// Never shortened: SCRU128 ids differ mostly in their tail.
			{title: "ID"},
			{title: "QUEUE", flex: true, min: 5, drop: 4},
			{title: "TYPE", flex: true, min: 5, drop: 2},
			{title: "PRI", right: true, drop: 1},
			{title: "ATT", right: true, optional: true},
		}
		if t == tabReady {
			// The tab holds the ready and the parked jobs: which is which
			// is never hidden.
			cols = append(cols, column{title: "STATE"})
		}
		cols = append(cols,
			column{title: age, right: true},
			column{title: "BUDGETS", flex: true, min: 7, drop: 3},
		)
		m.tables[t] = newTable(keys, st, empty, cols...)
	}
	if opts.Dial != nil {
		m.push.mode = pushDialing
	}
	m.restyle(true)
	m.layout()
	return m
}

// restyle switches every style to the colours for a dark or a light
// background. The tables share m.st; help and input keep copies.
func (m *Model) restyle(dark bool) {
	*m.st = newStyles(dark)
	m.help.Styles = m.st.help
	m.input.SetStyles(m.st.input)
}

// Run shows the dashboard full-screen until the user quits or ctx ends.
func Run(ctx context.Context, src Source, opts Options) error {
	m := New(src, opts)
	m.ctx = ctx
	popts := []tea.ProgramOption{tea.WithContext(ctx)}
	if opts.Input != nil {
		popts = append(popts, tea.WithInput(opts.Input))
	}
	if opts.Output != nil {
		popts = append(popts, tea.WithOutput(opts.Output))
	}
	_, err := tea.NewProgram(m, popts...).Run()
	if err != nil && ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return nil
	}
	return err
}

// Init starts the polling loop with an immediate fetch, and asks the
// terminal for its background colour. Nothing waits for that answer: the
// dashboard draws in dark colours at once and switches if the terminal
// says it is light (a terminal that never answers stays dark). With
// NoColor, colours do not matter and the terminal is not asked.
func (m Model) Init() tea.Cmd {
	var askBackground tea.Cmd
	if !m.opts.NoColor {
		askBackground = tea.RequestBackgroundColor
	}
	var dial tea.Cmd
	if m.opts.Dial != nil {
		dial = m.dial()
	}
	return tea.Batch(m.fetch(true), askBackground, dial)
}

// Update applies one message to the dashboard.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tickMsg:
		cmd = m.fetch(true)
	case fetchMsg:
		cmd = m.applyFetch(msg)
	case dialMsg:
		cmd = m.applyDial(msg)
	case frameMsg:
		cmd = m.applyFrame(msg)
	case redialMsg:
		cmd = m.dial()
	case actionMsg:
		cmd = m.applyAction(msg)
	case extrasTickMsg:
		if cmd = m.fetchExtras(); cmd == nil {
			cmd = m.tickExtras() // nothing on screen: look again later
		}
	case extrasMsg:
		cmd = m.applyExtras(msg)
	case cronGroupMsg:
		m.applyCronGroup(msg)
	case whyMsg:
		// An answer about a job no longer selected is stale.
		if msg.id == m.whyTarget() {
			m.now = m.opts.Now()
			m.setWhy(msg.id, msg.seq, msg.why, msg.err)
		}
	case tea.BackgroundColorMsg:
		m.restyle(msg.IsDark())
	case tea.KeyPressMsg:
		cmd = m.keyPress(msg)
	case tea.PasteMsg:
		// A paste stays whole: it goes to the filter, never to the keys.
		if m.filtering {
			cmd = m.editFilter(msg)
		}
	default:
		if m.filtering {
			m.input, cmd = m.input.Update(msg)
		}
	}
	m.layout()
	return m, cmd
}

func (m *Model) applyFetch(msg fetchMsg) tea.Cmd {
	m.now = m.opts.Now()
	err := msg.err
	if err == nil {
		err = msg.jobsErr
	}
	if msg.err == nil {
		m.stats, m.haveStats = msg.stats, true
		if msg.status != "" && msg.jobsErr == nil && msg.seq > m.jobsSeq[msg.status] {
			if !msg.pushed && !m.live() {
				m.jobs[msg.status], m.jobsSeq[msg.status] = msg.jobs, msg.seq
			}
			if msg.status == api.StatusReady {
				m.setParked(msg.parked)
			}
		}
		if msg.whyID != "" {
			m.setWhy(msg.whyID, msg.seq, msg.why, msg.whyErr)
		}
	}
	delay := m.opts.Refresh
	if err != nil {
		m.conn, m.lastErr = connReconnecting, err
		m.failures++
		delay = backoff(m.opts.Refresh, m.failures)
	} else {
		m.conn, m.lastErr, m.failures = connConnected, nil, 0
		m.lastOK = m.now
	}
	m.retryIn = delay
	m.rebuild()
	var next tea.Cmd
	if msg.poll {
		next = tick(delay)
		if !m.extrasOn {
			// The forecasts' rounds start with the polling loop's first
			// answer, and then run on their own.
			m.extrasOn = true
			next = tea.Batch(next, m.tickExtras())
		}
	}
	// New rows may have put the cursor on a job not yet explained.
	var why tea.Cmd
	if id := m.whyTarget(); id != "" && id != m.whyID {
		why = m.fetchWhy()
	}
	return tea.Batch(next, why)
}

// setParked records which jobs are parked, from a page of them.
func (m *Model) setParked(l api.JobList) {
	clear(m.parked)
	for _, j := range l.Jobs {
		m.parked[j.ID] = true
	}
}

func (m *Model) setWhy(id string, seq uint64, why api.Why, err error) {
	if id == m.whyID && seq < m.whySeq {
		return
	}
	m.whyID, m.whySeq, m.why, m.whyErr = id, seq, why, err
}

// keyPress handles one key press. Bubble Tea decodes keys typed faster
// than the terminal is read into one message each; once the dashboard
// quits, the keys still queued behind the quitting one are ignored.
func (m *Model) keyPress(msg tea.KeyPressMsg) tea.Cmd {
	if m.quitting {
		return nil
	}
	m.notice = ""
	if m.asking != nil {
		return m.answer(msg)
	}
	if m.filtering {
		return m.filterKey(msg)
	}
	return m.key(msg)
}

// key handles a key outside the filter input.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(msg, m.keys.Quit):
		m.quitting = true
		return tea.Quit
	case key.Matches(msg, m.keys.Help):
		m.help.ShowAll = !m.help.ShowAll
	case key.Matches(msg, m.keys.NextTab):
		return m.switchTab((m.tab + 1) % numTabs)
	case key.Matches(msg, m.keys.PrevTab):
		return m.switchTab((m.tab + numTabs - 1) % numTabs)
	case key.Matches(msg, m.keys.Filter):
		m.filtering = true
		return m.input.Focus()
	case key.Matches(msg, m.keys.Clear):
		if m.help.ShowAll {
			m.help.ShowAll = false
		} else {
			m.setFilter("")
		}
	case key.Matches(msg, m.keys.Open) && m.tab == tabCrons:
		return m.toggleGroup()
	case key.Matches(msg, m.keys.Sort):
		m.sortBy = (m.sortBy + 1) % numSorts
		m.rebuild()
	default:
		if cmd, ok := m.startAction(msg); ok {
			return cmd
		}
		if cmd, ok := m.scrollWindow(m.cursorMove(msg)); ok {
			return cmd
		}
		before, _ := m.tables[m.tab].Selected()
		m.tables[m.tab], _ = m.tables[m.tab].Update(msg)
		if after, _ := m.tables[m.tab].Selected(); after.key != before.key {
			return m.fetchWhy()
		}
	}
	return nil
}

// cursorMove says where a cursor key takes the cursor of a list of total
// rows and which anchor finds that place; the target is the cursor itself
// for a key that does not move it.
func (m *Model) cursorMove(msg tea.KeyPressMsg) func(cursor, visible, total int) (int, string) {
	return func(cursor, visible, total int) (int, string) {
		switch {
		case key.Matches(msg, m.keys.Up):
			return cursor - 1, api.AnchorOffset
		case key.Matches(msg, m.keys.Down):
			return cursor + 1, api.AnchorOffset
		case key.Matches(msg, m.keys.PageUp):
			return cursor - visible, api.AnchorOffset
		case key.Matches(msg, m.keys.PageDown):
			return cursor + visible, api.AnchorOffset
		case key.Matches(msg, m.keys.Top):
			return 0, api.AnchorHead
		case key.Matches(msg, m.keys.Bottom):
			return total - 1, api.AnchorTail
		}
		return cursor, api.AnchorOffset
	}
}

// filterKey handles a key while the filter is being typed.
func (m *Model) filterKey(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(msg, m.keys.ForceQuit):
		m.quitting = true
		return tea.Quit
	case key.Matches(msg, m.keys.Accept):
		m.filtering = false
		m.input.Blur()
		return m.fetchWhy()
	case key.Matches(msg, m.keys.Cancel):
		m.filtering = false
		m.input.Blur()
		m.setFilter("")
		return m.fetchWhy()
	}
	return m.editFilter(msg)
}

// editFilter hands msg to the filter input and applies what it typed.
func (m *Model) editFilter(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	m.filter = m.input.Value()
	m.rebuild()
	return cmd
}

func (m *Model) setFilter(s string) {
	m.input.SetValue(s)
	m.filter = s
	m.rebuild()
}

func (m *Model) switchTab(t tab) tea.Cmd {
	m.tab = t
	if t.status() == "" {
		return nil
	}
	return m.fetch(false)
}

// whyTarget is the id of the selected job when it is worth explaining: a
// ready job may be parked behind budgets.
func (m *Model) whyTarget() string {
	if m.tab != tabReady {
		return ""
	}
	r, ok := m.tables[tabReady].Selected()
	if !ok {
		return ""
	}
	return r.key
}

// layout hands each component its share of the screen.
func (m *Model) layout() {
	m.help.SetWidth(m.width)
	m.input.SetWidth(max(1, m.width/2-4)) // room for the keys beside it
	body := m.height - m.chromeHeight()
	for i := range m.tables {
		m.tables[i].SetSize(m.width, max(2, body))
	}
}
