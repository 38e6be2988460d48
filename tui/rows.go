package tui

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/zizq/zizq/api"
)

// rebuild refreshes every tab's rows from the data and the filter.
func (m *Model) rebuild() {
	m.tables[tabBudgets].SetRows(m.budgetRows())
	m.tables[tabQueues].SetRows(m.queueRows())
	m.tables[tabCrons].SetRows(m.cronRows())
	for _, t := range []tab{tabInFlight, tabReady, tabScheduled} {
		m.tables[t].SetRows(m.jobRows(t))
	}
}

// matches reports whether any of keys contains the filter, ignoring case.
func (m *Model) matches(keys ...string) bool {
	if m.filter == "" {
		return true
	}
	f := strings.ToLower(m.filter)
	for _, k := range keys {
		if strings.Contains(strings.ToLower(k), f) {
			return true
		}
	}
	return false
}

// sortedBudgets orders budgets by key, in natural order (b2 before b10).
// Not by a live figure: rows that moved whenever their parked count
// changed would jump under the cursor at every refresh. The parked rows
// stand out by their colour instead.
func sortedBudgets(bs []api.Budget) []api.Budget {
	out := slices.Clone(bs)
	slices.SortFunc(out, func(a, b api.Budget) int { return naturalCompare(a.Key, b.Key) })
	return out
}

func (m *Model) gaugeWidth() int {
	if m.width >= 100 {
		return 10
	}
	return 5
}

// budgetRows lists the budgets, a calendar budget or a family followed by
// a note: what the calendar budget used this period, the family's
// sub-keys. A paused budget says so in NEXT (its head waits for the end of
// the pause) and is dimmed unless it holds parked jobs.
func (m *Model) budgetRows() []row {
	nowMs := m.now.UnixMilli()
	var rows []row
	for _, b := range sortedBudgets(m.stats.Budgets) {
		if !m.matches(b.Key) {
			continue
		}
		rows = append(rows, m.budgetRow(b, nowMs))
		if note := m.budgetNote(b, nowMs); note != "" {
			rows = append(rows, row{key: b.Key + entryKeySep + "note", cells: []string{note}, note: true})
		}
	}
	return rows
}

// budgetNote is the line under a budget's row, "" for none: a calendar
// budget's period, "└ used 1834 of 100000, resets in 3h02m", then a
// family's sub-keys (see familyNote).
func (m *Model) budgetNote(b api.Budget, nowMs int64) string {
	var parts []string
	if p := periodWords(b, nowMs); p != "" {
		parts = append(parts, p)
	}
	if b.PerKey != nil {
		parts = append(parts, m.familyNote(b))
	}
	if len(parts) == 0 {
		return ""
	}
	return "└ " + strings.Join(parts, "; ")
}

// periodWords says what a calendar budget used of its allocation this
// period and when it resets: "used 1834 of 100000, resets in 3h02m"; ""
// for other budgets, or without live figures.
func periodWords(b api.Budget, nowMs int64) string {
	s := b.State
	if b.Strategy.Type != api.StrategyCalendar || s == nil || s.Used == nil {
		return ""
	}
	out := "used " + itoa(*s.Used) + " of " + itoa(b.Allocation)
	if s.NextResetAt != nil {
		out += ", resets " + inUntil(nowMs, *s.NextResetAt)
	}
	return out
}

func (m *Model) budgetRow(b api.Budget, nowMs int64) row {
	r := row{key: b.Key, cells: []string{b.Key, strategyWord(b), rateWords(b)}}
	if budgetPaused(b, nowMs) {
		r.tone = tonePaused
	}
	s := b.State
	if s == nil {
		r.cells = append(r.cells, "-", "-", "-", m.drainsIn(b), "-", cmp.Or(m.pauseWords(b), "-"), "-", "-")
		return r
	}
	oldest := "-"
	if s.OldestParkedMs != nil {
		oldest = fmtMs(*s.OldestParkedMs)
	}
	r.cells = append(r.cells,
		gauge(s.Available, s.Capacity, m.gaugeWidth())+" "+fmtTokens(s.Available)+"/"+strconv.FormatInt(s.Capacity, 10),
		strconv.FormatInt(s.Held, 10),
		strconv.FormatInt(s.Parked, 10),
		m.drainsIn(b),
		oldest,
		cmp.Or(m.pauseWords(b), nextToken(b, nowMs)),
		strconv.FormatInt(s.InFlight, 10),
		strconv.FormatInt(s.Dispatched, 10),
	)
	if s.Parked > 0 {
		r.tone = toneParked
	}
	if s.Available < 0 {
		r.debtAt = budgetAvailableCol + 1
	}
	if backingOff(b, nowMs) {
		r.cells[budgetKeyCol] += backoffMark
		r.warnAt = budgetKeyCol + 1
	}
	return r
}

// budgetKeyCol is the index of KEY in the Budgets tab.
const budgetKeyCol = 0

// budgetAvailableCol is the index of AVAILABLE in the Budgets tab.
const budgetAvailableCol = 3

// nextToken says when the head of a budget's line becomes affordable.
func nextToken(b api.Budget, nowMs int64) string {
	s := b.State
	switch {
	case s == nil:
		return "-"
	case s.NextTokenAt != nil:
		return until(nowMs, *s.NextTokenAt)
	case s.Parked > 0 && b.Strategy.Type == api.StrategyWhileInFlight:
		return "release" // waits for a job to finish
	default:
		return "-"
	}
}

func (m *Model) queueRows() []row {
	qs := slices.Clone(m.stats.Queues)
	slices.SortFunc(qs, func(a, b api.QueueStats) int { return naturalCompare(a.Name, b.Name) })
	var rows []row
	for _, q := range qs {
		if !m.matches(q.Name) {
			continue
		}
		r := row{key: q.Name, cells: []string{
			q.Name,
			strconv.FormatInt(q.Scheduled, 10),
			strconv.FormatInt(q.Ready, 10),
			strconv.FormatInt(q.Parked, 10),
			strconv.FormatInt(q.InFlight, 10),
			strconv.FormatInt(q.Scheduled+q.Ready+q.Parked+q.InFlight, 10),
		}}
		if q.Parked > 0 {
			r.tone = toneParked
		}
		rows = append(rows, r)
	}
	return rows
}

func (m *Model) jobRows(t tab) []row {
	nowMs := m.now.UnixMilli()
	var rows []row
	for _, j := range sortJobs(m.jobs[t.status()].Jobs, t.status(), m.sortBy) {
		keys := []string{j.ID, j.Queue, j.Type}
		for _, b := range j.Budgets {
			keys = append(keys, b.Key)
		}
		parked := t == tabReady && m.parked[j.ID]
		if t == tabReady {
			keys = append(keys, waitingState(parked)) // "/parked" keeps the parked ones
		}
		if !m.matches(keys...) {
			continue
		}
		var age string
		switch t {
		case tabInFlight:
			age = since(nowMs, int64(j.DequeuedAt))
		case tabReady:
			age = since(nowMs, int64(j.ReadyAt))
		case tabScheduled:
			age = until(nowMs, int64(j.ReadyAt))
		}
		r := row{key: j.ID, cells: []string{
			j.ID,
			j.Queue,
			j.Type,
			strconv.FormatUint(uint64(j.Priority), 10),
			strconv.FormatUint(uint64(j.Attempts), 10),
		}}
		if t == tabReady {
			r.cells = append(r.cells, waitingState(parked))
		}
		r.cells = append(r.cells, age, fmtBindings(j.Budgets))
		if parked {
			r.tone = toneParked
		}
		rows = append(rows, r)
	}
	return rows
}

// waitingState names what a job of the Ready tab is: parked, or ready.
func waitingState(parked bool) string {
	if parked {
		return "parked"
	}
	return "ready"
}

// selectedBudget, selectedQueue and selectedJob return what the cursor of
// the visible tab is on.
func (m *Model) selectedBudget() (api.Budget, bool) {
	r, ok := m.tables[tabBudgets].Selected()
	if !ok {
		return api.Budget{}, false
	}
	for _, b := range m.stats.Budgets {
		if b.Key == r.key {
			return b, true
		}
	}
	return api.Budget{}, false
}

func (m *Model) selectedQueue() (api.QueueStats, bool) {
	r, ok := m.tables[tabQueues].Selected()
	if !ok {
		return api.QueueStats{}, false
	}
	for _, q := range m.stats.Queues {
		if q.Name == r.key {
			return q, true
		}
	}
	return api.QueueStats{}, false
}

func (m *Model) selectedJob() (api.Job, bool) {
	r, ok := m.tables[m.tab].Selected()
	if !ok || m.tab.status() == "" {
		return api.Job{}, false
	}
	for _, j := range m.jobs[m.tab.status()].Jobs {
		if j.ID == r.key {
			return j, true
		}
	}
	return api.Job{}, false
}

// cronRows lists the cron groups by name. NEXT RUN is when the group next
// enqueues a job ("paused" when it will not until resumed, "-" when no
// entry has a future occurrence); a paused group is dimmed.
func (m *Model) cronRows() []row {
	nowMs := m.now.UnixMilli()
	var rows []row
	groups := slices.Clone(m.stats.Crons)
	slices.SortFunc(groups, func(a, b api.CronStats) int { return naturalCompare(a.Name, b.Name) })
	for _, g := range groups {
		if !m.matches(g.Name, g.NextEntry) {
			continue
		}
		next, entry := "-", "-"
		switch {
		case g.Paused:
			next = "paused"
		case g.NextEnqueueAt != 0:
			next, entry = until(nowMs, int64(g.NextEnqueueAt)), g.NextEntry
		case g.PausedEntries > 0 && g.PausedEntries == g.Entries:
			next = "paused"
		}
		last := "-"
		if g.LastEnqueueAt != 0 {
			last = since(nowMs, int64(g.LastEnqueueAt)) + " ago"
		}
		r := row{key: g.Name, cells: []string{
			g.Name, pausedWord(g.Paused), strconv.Itoa(g.Entries), strconv.Itoa(g.PausedEntries), next, entry, last,
		}}
		if g.Paused {
			r.tone = tonePaused
		}
		rows = append(rows, r)
		rows = append(rows, m.entryRows(g.Name)...)
	}
	return rows
}

func pausedWord(paused bool) string {
	if paused {
		return "paused"
	}
	return "active"
}

func (m *Model) selectedCron() (api.CronStats, bool) {
	r, ok := m.tables[tabCrons].Selected()
	if !ok {
		return api.CronStats{}, false
	}
	for _, g := range m.stats.Crons {
		if g.Name == r.key {
			return g, true
		}
	}
	return api.CronStats{}, false
}
