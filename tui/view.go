package tui

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/zizq/zizq/api"
)

// View draws the whole screen, full-screen (the alternate screen).
func (m Model) View() tea.View {
	v := tea.NewView(m.screen())
	v.AltScreen = true
	return v
}

// screen is the content of the screen: exactly height lines, none wider
// than width, plain text under NoColor. It reads the clock only through
// m.now, set by Update.
func (m Model) screen() string {
	if m.quitting {
		return ""
	}
	body := m.tables[m.tab]
	if len(body.rows) == 0 {
		if _, ok := m.jobs[m.tab.status()]; m.tab.status() != "" && !ok {
			body.empty = "loading…"
		} else if m.filter != "" {
			body.empty = "nothing matches /" + m.filter
		}
	}
	parts := append(m.headerLines(), m.tabsLine(), body.View())
	if d := m.detailHeight(); d > 0 {
		parts = append(parts, m.detailLines(d)...)
	}
	parts = append(parts, m.footer())
	s := strings.Join(parts, "\n")
	if m.opts.NoColor {
		s = ansi.Strip(s)
	}
	return frame(s, m.width, m.height)
}

// frame cuts s to w columns and h lines, padding with empty lines. A line
// it cuts ends in "…", so that no number is ever cut silently.
func frame(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:max(0, h)]
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > w {
			l = ansi.Truncate(l, w, "…")
		}
		lines[i] = strings.TrimRight(l, " ")
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// chromeHeight is the number of lines around the table of the visible tab.
func (m *Model) chromeHeight() int {
	h := len(m.headerLines()) + 1 // tabs
	if d := m.detailHeight(); d > 0 {
		h += d + 1 // rule
	}
	return h + lipgloss.Height(m.footer())
}

// detailHeight is the number of lines of the detail panel, 0 when the
// screen is too short to spare them.
func (m *Model) detailHeight() int {
	switch {
	case m.height < 16:
		return 0
	case m.height < 30:
		return 4
	default:
		return 6
	}
}

func (m *Model) headerLines() []string {
	st := m.st
	var status string
	switch m.conn {
	case connConnecting:
		status = st.dim.Render("connecting…")
	case connConnected:
		status = st.ok.Render("● connected")
		if m.push.mode != pushOff {
			status += " " + m.modeWord()
		}
	case connReconnecting:
		status = st.bad.Render("○ reconnecting") + st.dim.Render(" (retry in "+fmtAge(m.retryIn)+")")
	}
	url := m.opts.URL
	if url == "" {
		url = "-"
	}
	title := st.title.Render("zizq top")
	// The connection status outlasts the URL on a narrow screen.
	if room := m.width - lipgloss.Width(title) - lipgloss.Width(status) - 4; ansi.StringWidth(url) > room {
		url = ansi.Truncate(url, max(1, room), "…")
	}
	top := []string{title, url, status}
	if m.haveStats {
		top = append(top, m.serverParts()...)
	}
	lines := []string{joinFit(top, "  ", m.width), m.totalsLine()}
	if m.push.mode == pushDown {
		lines = append(lines, m.streamDownLines()...)
	}

	if m.conn == connReconnecting {
		age := "no data yet"
		if m.haveStats {
			age = "data " + fmtAge(m.now.Sub(m.lastOK)) + " old"
		}
		why := st.bad.Render(fmt.Sprintf("failed %d× (%s): ", m.failures, age)) + oneLine(m.lastErr)
		// Errors run long (URL, address, cause): give them two lines.
		wrapped := strings.Split(ansi.Wrap(why, max(1, m.width), " "), "\n")
		lines = append(lines, wrapped[:min(2, len(wrapped))]...)
	}
	return lines
}

// modeWord says how the lists come: pushed by the admin port's event
// stream (live), or polled from the API.
func (m *Model) modeWord() string {
	switch m.push.mode {
	case pushOn:
		return m.st.ok.Render("live")
	case pushDialing:
		return m.st.dim.Render("polling (opening the event stream…)")
	}
	return m.st.dim.Render("polling")
}

// totalsLine counts the server's jobs by status, ready and parked side by
// side in the words and numbers of the Ready tab's label. Narrower screens
// get shorter labels, then only the counts of what waits; a number is cut
// (with "…") only when even "parked N" does not fit.
func (m *Model) totalsLine() string {
	st := m.st
	if !m.haveStats {
		return st.label.Render("jobs") + "  " + st.dim.Render("waiting for the server")
	}
	j := m.stats.Jobs
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	parked := "parked " + n(j.Parked)
	if j.Parked > 0 {
		parked = st.warn.Render(parked)
	}
	long := strings.Join([]string{"scheduled " + n(j.Scheduled), "ready " + n(j.Ready), parked, "in flight " + n(j.InFlight)}, "  ")
	short := strings.Join([]string{"sched " + n(j.Scheduled), "ready " + n(j.Ready), parked, "flight " + n(j.InFlight)}, "  ")
	return firstFit(m.width,
		st.label.Render("jobs")+"  "+long,
		long,
		short,
		"ready "+n(j.Ready)+"  "+parked,
		parked)
}

// firstFit returns the first of lines no wider than w, or else the last
// (which frame cuts, with "…").
func firstFit(w int, lines ...string) string {
	for _, l := range lines {
		if lipgloss.Width(l) <= w {
			return l
		}
	}
	return lines[len(lines)-1]
}

// joinFit joins parts with sep, leaving out the parts from the first one
// that would make the line wider than w (the first part always stays).
func joinFit(parts []string, sep string, w int) string {
	line := parts[0]
	for _, p := range parts[1:] {
		if lipgloss.Width(line+sep+p) > w {
			break
		}
		line += sep + p
	}
	return line
}

// oneLine flattens an error message onto one line. The method and URL of
// a failed request are dropped: the header already shows the server.
func oneLine(err error) string {
	if err == nil {
		return ""
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

// tabCount is the number of rows a tab holds on the server.
func (m *Model) tabCount(t tab) int64 {
	switch t {
	case tabBudgets:
		return int64(len(m.stats.Budgets))
	case tabQueues:
		return int64(len(m.stats.Queues))
	case tabInFlight:
		return m.stats.Jobs.InFlight
	case tabReady:
		return m.stats.Jobs.Ready + m.stats.Jobs.Parked
	case tabCrons:
		return int64(len(m.stats.Crons))
	default:
		return m.stats.Jobs.Scheduled
	}
}

// unfiltered is the number of rows a tab would show without the filter.
func (m *Model) unfiltered(t tab) int {
	switch t {
	case tabBudgets:
		return len(m.stats.Budgets)
	case tabQueues:
		return len(m.stats.Queues)
	case tabCrons:
		return len(m.stats.Crons)
	default:
		return len(m.jobs[t.status()].Jobs)
	}
}

// tabShortNames name the tabs on narrow screens.
var tabShortNames = [numTabs]string{"Budgets", "Queues", "Flight", "Ready", "Sched", "Crons"}

// tabsLine names the tabs, the visible one in brackets, and says on the
// right what the visible table leaves out. Narrower screens get short
// names, then counts on the visible tab only, then that tab alone, then
// without its count (the line above still has it); then "first N of M"
// goes, before the count of hidden columns or the filter.
func (m *Model) tabsLine() string {
	rows, cols := m.tableInfo()
	infos := []string{rows + cols}
	if rows != "" && cols != "" {
		infos[0] = rows + " · " + cols
		if m.filter == "" {
			infos = append(infos, cols)
		}
	}
	variants := []string{
		m.tabs(tabNames, true),
		m.tabs(tabShortNames, true),
		m.tabs(tabShortNames, false),
		m.tabLabel(m.tab, tabNames, true),
		m.tabLabel(m.tab, tabShortNames, false),
	}
	for _, info := range infos {
		for _, left := range variants {
			gap := m.width - lipgloss.Width(left) - lipgloss.Width(info)
			switch {
			case info == "" && gap >= 0:
				return left
			case info != "" && gap >= 2:
				return left + strings.Repeat(" ", gap) + m.st.dim.Render(info)
			}
		}
	}
	return variants[len(variants)-1] + "  " + m.st.dim.Render(infos[len(infos)-1])
}

// tabs draws every tab; counts on all of them, or on the visible one only.
func (m *Model) tabs(names [numTabs]string, allCounts bool) string {
	var b strings.Builder
	for t := range numTabs {
		b.WriteString(m.tabLabel(t, names, allCounts || t == m.tab))
	}
	return b.String()
}

func (m *Model) tabLabel(t tab, names [numTabs]string, count bool) string {
	label := names[t]
	switch {
	case !count || !m.haveStats:
	case t == tabReady:
		// The tab holds both; the header counts them apart, in these words.
		j := m.stats.Jobs
		label += " " + strconv.FormatInt(j.Ready, 10) + " · parked " + strconv.FormatInt(j.Parked, 10)
	default:
		label += " " + strconv.FormatInt(m.tabCount(t), 10)
	}
	if t == m.tab {
		return m.st.tabActive.Render("[" + label + "]")
	}
	return m.st.tab.Render(" " + label + " ")
}

// tableInfo says what the visible table does not show: the rows the
// filter hides or the server did not send, and the columns too wide for
// the screen ("+2 cols"). Either is "" when there are none.
func (m *Model) tableInfo() (rows, cols string) {
	shown := m.tables[m.tab].count()
	switch {
	case m.filter != "":
		rows = fmt.Sprintf("/%s: %d of %d", m.filter, shown, m.unfiltered(m.tab))
	case m.live() && m.push.windows[m.tab.status()] != nil && shown > 0:
		if w := m.push.windows[m.tab.status()]; shown < w.total {
			rows = fmt.Sprintf("rows %d–%d of %d", w.first+1, w.first+shown, w.total)
		}
	case m.tab.status() != "" && m.haveStats && int64(shown) < m.tabCount(m.tab) && shown > 0:
		rows = fmt.Sprintf("first %d of %d", shown, m.tabCount(m.tab))
	}
	if m.tab.status() != "" && m.sortBy != sortList {
		rows = strings.TrimPrefix(rows+" · by "+sortNames[m.sortBy], " · ")
	}
	switch n := m.tables[m.tab].hidden(); {
	case n == 1:
		cols = "+1 col"
	case n > 1:
		cols = "+" + plural(int64(n), "col", "cols")
	}
	return rows, cols
}

func (m *Model) footer() string {
	if m.asking != nil {
		return m.st.warn.Render(m.asking.ask) + "  y: yes · any other key: no"
	}
	if m.notice != "" {
		h := m.help
		h.SetWidth(max(0, m.width-lipgloss.Width(m.notice)-2))
		return m.st.label.Render(m.notice) + "  " + h.ShortHelpView(m.keys.ShortHelp())
	}
	if m.filtering {
		// The keys get what the input leaves, and drop whole hints.
		in := m.input.View() + "  "
		h := m.help
		h.SetWidth(max(0, m.width-lipgloss.Width(in)))
		return in + h.ShortHelpView(filterKeys{m.keys}.ShortHelp())
	}
	return m.help.View(m.keys)
}

// detailLines draws the rule and d lines about the selected row.
func (m *Model) detailLines(d int) []string {
	title, body := m.detail()
	rule := "── " + title + " "
	rule += strings.Repeat("─", max(0, m.width-ansi.StringWidth(rule)))
	lines := []string{m.st.rule.Render(rule)}
	for i := range d {
		if i < len(body) {
			lines = append(lines, " "+body[i])
		} else {
			lines = append(lines, "")
		}
	}
	return lines
}

// detail describes the selected budget, queue or job.
func (m *Model) detail() (string, []string) {
	switch m.tab {
	case tabBudgets:
		if b, ok := m.selectedBudget(); ok {
			return "budget " + b.Key, m.budgetDetail(b)
		}
	case tabQueues:
		if q, ok := m.selectedQueue(); ok {
			return "queue " + q.Name, queueDetail(q)
		}
	case tabCrons:
		if group, e, ok := m.selectedEntry(); ok {
			return "cron entry " + group + "/" + e.Name, m.entryDetail(group, e)
		}
		if g, ok := m.selectedCron(); ok {
			return "cron group " + g.Name, m.cronDetail(g)
		}
	default:
		if j, ok := m.selectedJob(); ok {
			return "job " + j.ID, m.jobDetail(j)
		}
	}
	return "details", []string{m.st.dim.Render("nothing selected")}
}

// budgetDetail describes a budget, most telling first, as the panel may
// cut the last lines: its strategy (a calendar budget's with its period,
// an adaptive one's with its back-off), its level, how it backs off now,
// its debt, what its settles say, its parked jobs (the row shows those
// too), then budgetMore's, then a back-off that is over.
func (m *Model) budgetDetail(b api.Budget) []string {
	nowMs := m.now.UnixMilli()
	head := strategyLong(b)
	if p := periodWords(b, nowMs); p != "" {
		head = "calendar " + b.Strategy.Reset + " (" + cmp.Or(b.Strategy.Timezone, "UTC") + "): " + p
	}
	if a := adaptiveWords(b); a != "" {
		head += " · " + a
	}
	lines := []string{head}
	s := b.State
	if s == nil {
		return append(lines, m.st.dim.Render("no live figures"))
	}
	inFlight := fmt.Sprintf("in flight %d", s.InFlight)
	if b.Strategy.Type == api.StrategyWhileInFlight {
		inFlight += fmt.Sprintf(" holding %d", s.Held)
	}
	lines = append(lines, fmt.Sprintf("available %s of %d · %s · dispatched %d",
		strconv.FormatFloat(s.Available, 'f', -1, 64), s.Capacity, inFlight, s.Dispatched))
	// Backing off now says why the budget pays less, next to its level;
	// a back-off that is over is history, and comes last.
	backoff := m.backoffWords(b)
	if backoff != "" && backingOff(b, nowMs) {
		lines = append(lines, m.st.warn.Render(backoff))
		backoff = ""
	}
	if w := m.sharesWords(b); w != "" { // a family's tenants (shares.go)
		lines = append(lines, w)
	}
	if d := m.debtWords(b); d != "" {
		lines = append(lines, m.st.debt.Render(d))
	}
	if st := settledWords(s); st != "" {
		lines = append(lines, st)
	}
	var next string
	switch {
	case s.NextTokenAt != nil:
		next = "head affordable " + inUntil(nowMs, *s.NextTokenAt)
	case s.Parked > 0 && b.Strategy.Type == api.StrategyWhileInFlight:
		next = "head waits for a release"
	}
	if s.Parked > 0 {
		line := fmt.Sprintf("parked %d", s.Parked)
		if s.OldestParkedMs != nil {
			line += " · oldest parked " + fmtMs(*s.OldestParkedMs) + " ago"
		}
		if next != "" {
			line += " · " + next
		}
		lines = append(lines, m.st.warn.Render(line))
	} else {
		line := "no parked jobs"
		if next != "" {
			line += " · " + next
		}
		lines = append(lines, line)
	}
	lines = append(lines, m.budgetMore(b)...)
	if backoff != "" {
		lines = append(lines, backoff+", back at its configured rate")
	}
	return lines
}

// debtWords says what a budget owes and when it is repaid: "in debt 50.5
// · repaid in 30m18s (12:30:18)"; "" when it owes nothing.
func (m *Model) debtWords(b api.Budget) string {
	s := b.State
	if s == nil || s.Debt == nil || *s.Debt <= 0 {
		return ""
	}
	out := "in debt " + strconv.FormatFloat(*s.Debt, 'f', -1, 64)
	if s.RepaidAt != nil {
		out += " · repaid " + inUntil(m.now.UnixMilli(), *s.RepaidAt) + " (" + m.clock(*s.RepaidAt) + ")"
	}
	return out
}

// settledWords says what the settles of a budget's jobs came to: "cost
// ratio 1.23 (actual ÷ estimate) · settled 40: credited 1200, debited
// 300"; "" before the first.
func settledWords(s *api.BudgetState) string {
	var parts []string
	if s.CostRatio != nil {
		parts = append(parts, "cost ratio "+strconv.FormatFloat(*s.CostRatio, 'f', 2, 64)+" (actual ÷ estimate)")
	}
	if st := s.Settled; st != nil && st.Count > 0 {
		parts = append(parts, fmt.Sprintf("settled %d: credited %d, debited %d", st.Count, st.Credited, st.Debited))
	}
	return strings.Join(parts, " · ")
}

// budgetMore says what a budget is beyond its figures: paused, a family,
// then when its backlog drains (the table shows each too: the detail
// panel may cut these lines at the bottom).
func (m *Model) budgetMore(b api.Budget) []string {
	var parts, lines []string
	if p := m.pauseWords(b); p != "" {
		parts = append(parts, p)
	}
	if b.PerKey != nil {
		t := api.Budget{Allocation: b.PerKey.Allocation, Strategy: b.PerKey.Strategy}
		parts = append(parts, fmt.Sprintf("family of %s, %s each", plural(m.subKeyCount(b), "sub-key", "sub-keys"), rateWords(t)))
	}
	if len(parts) > 0 {
		lines = append(lines, strings.Join(parts, " · "))
	}
	fc, ok := m.forecasts[b.Key]
	switch d := m.drainsIn(b); {
	case !ok:
	case fc.err != nil:
		lines = append(lines, m.st.dim.Render("forecast: "+oneLine(fc.err)))
	case d != "-" && fc.f.Parked > 0 && fc.f.DrainsAt != nil && d != "paused":
		when := "in " + d
		if d == "now" {
			when = d
		}
		lines = append(lines, fmt.Sprintf("backlog of %d drains %s (%s)", fc.f.Parked, when, m.clock(*fc.f.DrainsAt)))
	case fc.f.Parked > 0 && fc.f.DrainsAt == nil && fc.f.Unknown != "":
		lines = append(lines, m.st.dim.Render(fmt.Sprintf("backlog of %d: drain time unknown: %s", fc.f.Parked, fc.f.Unknown)))
	}
	return lines
}

func (m *Model) cronDetail(g api.CronStats) []string {
	state := "active"
	if g.Paused {
		state = "paused: its schedule moves on, nothing is enqueued"
	}
	lines := []string{fmt.Sprintf("%s · %s, %d paused", state, plural(int64(g.Entries), "entry", "entries"), g.PausedEntries)}
	if g.NextEnqueueAt != 0 {
		lines = append(lines, fmt.Sprintf("next run: entry %s %s (%s)", g.NextEntry,
			inUntil(m.now.UnixMilli(), int64(g.NextEnqueueAt)), m.cronClock(int64(g.NextEnqueueAt), "")))
	} else {
		lines = append(lines, m.st.dim.Render("no run to come"))
	}
	if g.LastEnqueueAt != 0 {
		lines = append(lines, "last run "+since(m.now.UnixMilli(), int64(g.LastEnqueueAt))+" ago ("+m.cronClock(int64(g.LastEnqueueAt), "")+")")
	}
	return lines
}

func (m *Model) entryDetail(group string, e api.CronEntry) []string {
	state := "active"
	if e.Paused {
		state = "paused: its schedule moves on, nothing is enqueued"
	}
	deref := func(s *string) string {
		if s == nil {
			return "-"
		}
		return *s
	}
	lines := []string{fmt.Sprintf("%s · %s · enqueues %s in queue %s", e.Expression, state, deref(e.Job.Type), deref(e.Job.Queue))}
	if e.NextEnqueueAt != 0 {
		lines = append(lines, "next occurrence "+inUntil(m.now.UnixMilli(), int64(e.NextEnqueueAt))+" ("+m.cronClock(int64(e.NextEnqueueAt), m.entryZone(group, e))+")")
	}
	return lines
}

func queueDetail(q api.QueueStats) []string {
	lines := []string{fmt.Sprintf("scheduled %d · ready %d · parked %d · in flight %d · total %d",
		q.Scheduled, q.Ready, q.Parked, q.InFlight, q.Scheduled+q.Ready+q.Parked+q.InFlight)}
	if q.Parked > 0 {
		lines = append(lines, "parked jobs are ready but held back by budgets (see Budgets)")
	}
	return lines
}

func (m *Model) jobDetail(j api.Job) []string {
	nowMs := m.now.UnixMilli()
	head := fmt.Sprintf("queue %s · type %s · priority %d · attempts %d", j.Queue, j.Type, j.Priority, j.Attempts)
	var when string
	switch j.Status {
	case api.StatusInFlight:
		when = "dequeued " + since(nowMs, int64(j.DequeuedAt)) + " ago"
	case api.StatusScheduled:
		when = "ready " + inUntil(nowMs, int64(j.ReadyAt)) + " (" + m.clock(int64(j.ReadyAt)) + ")"
	default:
		when = "ready for " + since(nowMs, int64(j.ReadyAt))
	}
	budgets := "no budgets"
	if len(j.Budgets) > 0 {
		budgets = "budgets " + fmtBindings(j.Budgets)
	}
	lines := []string{head, when + " · " + budgets}
	if m.tab == tabReady {
		lines = append(lines, m.whyLines(j)...)
	}
	return lines
}

// clock renders a ms timestamp as a wall-clock time in the zone of m.now.
func (m *Model) clock(ms int64) string {
	return time.UnixMilli(ms).In(m.now.Location()).Format("15:04:05")
}

// whyLines says what a ready job waits for, from GET /jobs/{id}/why.
func (m *Model) whyLines(j api.Job) []string {
	if m.whyID != j.ID {
		return []string{m.st.dim.Render("asking the server why…")}
	}
	if m.whyErr != nil {
		return []string{m.st.dim.Render("why: " + oneLine(m.whyErr))}
	}
	nowMs := m.now.UnixMilli()
	w := m.why
	switch w.WaitingFor {
	case api.WaitingBudget:
		// One line per refusing budget, so that two fit even at 80×24.
		lines := make([]string, 0, len(w.Budgets))
		for _, b := range w.Budgets {
			line := fmt.Sprintf("parked by %s: cost %d, %s available, %d ahead, ", b.Key, b.Cost,
				strconv.FormatFloat(b.Available, 'f', -1, 64), b.Ahead)
			if b.AffordableAt != nil {
				line += "affordable " + inUntil(nowMs, *b.AffordableAt)
			} else {
				line += "waits for a release"
			}
			lines = append(lines, m.st.warn.Render(line))
		}
		if len(lines) == 0 {
			lines = append(lines, m.st.warn.Render("parked"))
		}
		return lines
	case api.WaitingWorker:
		return []string{"affordable; waits for a worker of queue " + j.Queue + " with room"}
	case api.WaitingSchedule:
		return []string{"scheduled: ready " + inUntil(nowMs, int64(w.ReadyAt))}
	case api.WaitingNothing:
		return []string{"not held back: about to be dispatched"}
	case api.WaitingFinished:
		return []string{"finished (" + w.Status + ")"}
	}
	return []string{"waiting for " + w.WaitingFor}
}
