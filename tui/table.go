package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// column describes one column of a table. A table too wide for the screen
// first hides its optional columns, then shrinks its flexible ones down to
// their room, then hides columns by their drop rank, and only then shrinks
// the flexible ones down to min. A number is never cut: only flexible
// (text) columns shrink, and they end in "…".
type column struct {
	title    string
	right    bool // right-aligned (numbers)
	flex     bool // may shrink down to min to fit the width
	min      int
	optional bool // hidden, last first, before flexible columns shrink
	drop     int  // once shrunk columns do not fit, hidden lowest first; 0 never
	// room is for the names a table is about (budget keys, queues): the
	// column keeps up to a quarter of the width, and figures are hidden
	// before it is cut shorter.
	room bool
}

// floor is the width a flexible column shrinks to before ranked columns
// are hidden: its min, or for a column with room a quarter of the width.
func (c column) floor(width int) int {
	if c.room {
		return max(c.min, width/4)
	}
	return c.min
}

// tone picks the colour of a whole row.
type tone int

const (
	toneNormal tone = iota
	toneParked      // the row holds parked jobs
	tonePaused      // the row is paused (a cron group)
)

// row is one table row. key identifies it across refreshes so that the
// selection follows the same budget or job when rows reorder.
type row struct {
	key   string
	cells []string
	tone  tone
	// note is a line about the row above it (a family's busiest
	// sub-keys): its one cell spans the width, outside the columns, and
	// the cursor steps over it.
	note bool
	// debtAt is the index plus one of the cell that shows a level below
	// zero (a budget in debt), drawn in the debt colour; 0 for none.
	debtAt int
	// warnAt is the index plus one of the cell that marks a budget that
	// backs off, drawn in the warning colour; 0 for none.
	warnAt int
}

// table is a scrollable table with a cursor: the component behind every tab.
type table struct {
	cols   []column
	rows   []row
	empty  string // shown when there are no rows
	cursor int
	offset int
	width  int
	height int // including the header line
	keys   keyMap
	st     *styles
}

func newTable(keys keyMap, st *styles, empty string, cols ...column) table {
	return table{cols: cols, keys: keys, st: st, empty: empty}
}

// SetSize sets the space the table draws in, header line included.
func (t *table) SetSize(w, h int) {
	t.width, t.height = w, h
	t.clamp()
}

// SetRows replaces the rows, keeping the selection on the row with the same
// key when there still is one.
func (t *table) SetRows(rows []row) {
	var sel string
	if r, ok := t.Selected(); ok {
		sel = r.key
	}
	t.rows = rows
	if sel != "" {
		for i, r := range rows {
			if r.key == sel {
				t.cursor = i
				break
			}
		}
	}
	t.cursor = max(0, min(t.cursor, len(t.rows)-1))
	t.skipNotes(-1)
	t.clamp()
}

// SetCursor puts the cursor on row i (clamped to the rows, off a note).
func (t *table) SetCursor(i int) {
	t.cursor = max(0, min(i, len(t.rows)-1))
	t.skipNotes(-1)
	t.clamp()
}

// Selected returns the row under the cursor.
func (t table) Selected() (row, bool) {
	if t.cursor < 0 || t.cursor >= len(t.rows) {
		return row{}, false
	}
	return t.rows[t.cursor], true
}

// Init is part of the component shape; the table has nothing to start.
func (t table) Init() tea.Cmd { return nil }

// Update moves the cursor on navigation keys.
func (t table) Update(msg tea.Msg) (table, tea.Cmd) {
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return t, nil
	}
	dir := 1
	switch {
	case key.Matches(km, t.keys.Up):
		t.cursor, dir = t.cursor-1, -1
	case key.Matches(km, t.keys.Down):
		t.cursor++
	case key.Matches(km, t.keys.PageUp):
		t.cursor, dir = t.cursor-t.visible(), -1
	case key.Matches(km, t.keys.PageDown):
		t.cursor += t.visible()
	case key.Matches(km, t.keys.Top):
		t.cursor = 0
	case key.Matches(km, t.keys.Bottom):
		t.cursor, dir = len(t.rows)-1, -1
	}
	t.cursor = max(0, min(t.cursor, len(t.rows)-1))
	t.skipNotes(dir)
	t.clamp()
	return t, nil
}

// skipNotes moves the cursor off a note row, in direction dir (+1 down,
// -1 up), or the other way when there is no row that way.
func (t *table) skipNotes(dir int) {
	for _, d := range []int{dir, -dir} {
		i := t.cursor
		for i >= 0 && i < len(t.rows) && t.rows[i].note {
			i += d
		}
		if i >= 0 && i < len(t.rows) {
			t.cursor = i
			return
		}
	}
}

// count is the number of rows, notes left out.
func (t table) count() int {
	n := 0
	for _, r := range t.rows {
		if !r.note {
			n++
		}
	}
	return n
}

// onScreen returns the rows that the table draws now.
func (t table) onScreen() []row {
	return t.rows[min(t.offset, len(t.rows)):min(len(t.rows), t.offset+t.visible())]
}

// visible is the number of rows that fit under the header.
func (t table) visible() int { return max(1, t.height-1) }

func (t *table) clamp() {
	t.cursor = max(0, min(t.cursor, len(t.rows)-1))
	vis := t.visible()
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+vis {
		t.offset = t.cursor - vis + 1
	}
	t.offset = max(0, min(t.offset, len(t.rows)-vis))
}

// layout picks the columns that are shown, their widths and the gap between
// them for the current width.
func (t table) layout() (shown []int, widths []int, gap int) {
	natural := make([]int, len(t.cols))
	for i, c := range t.cols {
		natural[i] = ansi.StringWidth(c.title)
		for _, r := range t.rows {
			if !r.note && i < len(r.cells) {
				natural[i] = max(natural[i], ansi.StringWidth(r.cells[i]))
			}
		}
	}
	for i := range t.cols {
		shown = append(shown, i)
	}
	avail := t.width - 2 // the cursor gutter
	for {
		widths = make([]int, len(shown))
		total := 0
		for j, i := range shown {
			widths[j] = natural[i]
			total += natural[i]
		}
		gaps := max(0, len(shown)-1)
		switch {
		case total+2*gaps <= avail:
			return shown, widths, 2
		case total+gaps <= avail:
			return shown, widths, 1
		case dropOptional(t.cols, &shown):
			continue
		case shrink(t.cols, shown, widths, avail-gaps, func(c column) int { return c.floor(avail) }):
			return shown, widths, 1
		case dropRanked(t.cols, &shown):
			continue
		case shrink(t.cols, shown, widths, avail-gaps, func(c column) int { return c.min }):
			return shown, widths, 1
		}
		// Nothing left to hide: the frame cuts the lines, with "…".
		return shown, widths, 1
	}
}

// hidden is the number of columns the current width leaves out.
func (t table) hidden() int {
	shown, _, _ := t.layout()
	return len(t.cols) - len(shown)
}

// shrink narrows the widest flexible column, one cell at a time but never
// below its floor, until the widths add up to at most avail. It reports
// whether they do.
func shrink(cols []column, shown, widths []int, avail int, floor func(column) int) bool {
	total := 0
	for _, w := range widths {
		total += w
	}
	for total > avail {
		widest := -1
		for j, i := range shown {
			c := cols[i]
			if c.flex && widths[j] > floor(c) && (widest < 0 || widths[j] > widths[widest]) {
				widest = j
			}
		}
		if widest < 0 {
			return false
		}
		widths[widest]--
		total--
	}
	return true
}

// dropOptional removes the last optional column from shown.
func dropOptional(cols []column, shown *[]int) bool {
	s := *shown
	for j := len(s) - 1; j >= 0; j-- {
		if cols[s[j]].optional {
			*shown = append(s[:j:j], s[j+1:]...)
			return true
		}
	}
	return false
}

// dropRanked removes the shown column of lowest drop rank.
func dropRanked(cols []column, shown *[]int) bool {
	s := *shown
	pick := -1
	for j, i := range s {
		if d := cols[i].drop; d > 0 && (pick < 0 || d < cols[s[pick]].drop) {
			pick = j
		}
	}
	if pick < 0 {
		return false
	}
	*shown = append(s[:pick:pick], s[pick+1:]...)
	return true
}

// rowStyle is the gutter of a row ("> " under the cursor) and the style it
// is drawn in; nil draws it as it is.
func (t table) rowStyle(r row, selected bool) (string, *lipgloss.Style) {
	switch {
	case selected && r.tone == toneParked:
		return "> ", &t.st.parkedSel
	case selected:
		return "> ", &t.st.selected
	case r.tone == toneParked:
		return "  ", &t.st.parked
	case r.tone == tonePaused:
		return "  ", &t.st.dim
	}
	return "  ", nil
}

// paint renders s in style, or leaves it as it is (nil style, or nothing
// to draw).
func paint(style *lipgloss.Style, s string) string {
	if style == nil || s == "" {
		return s
	}
	return style.Render(s)
}

// cellStyles are the styles of the row's shown cells that have one of
// their own (a level in debt, a budget that backs off), by position
// among the shown cells; nil when none has.
func (t table) cellStyles(r row, shown []int, selected bool) map[int]*lipgloss.Style {
	var out map[int]*lipgloss.Style
	mark := func(at int, plain, sel *lipgloss.Style) {
		j := slices.Index(shown, at-1)
		if at == 0 || j < 0 {
			return
		}
		if out == nil {
			out = map[int]*lipgloss.Style{}
		}
		out[j] = plain
		if selected {
			out[j] = sel
		}
	}
	mark(r.debtAt, &t.st.debt, &t.st.debtSel)
	mark(r.warnAt, &t.st.warn, &t.st.warnSel)
	return out
}

// paintCells draws a row's cells: those with a style of their own in it,
// the runs between them in the row's, the separators included (a
// selected row's background runs on).
func (t table) paintCells(parts []string, own map[int]*lipgloss.Style, style *lipgloss.Style, sep string) string {
	if len(own) == 0 {
		return paint(style, strings.Join(parts, sep))
	}
	var b strings.Builder
	run := ""
	for j, p := range parts {
		if j > 0 {
			run += sep
		}
		cell, ok := own[j]
		if !ok {
			run += p
			continue
		}
		b.WriteString(paint(style, run))
		b.WriteString(cell.Render(p))
		run = ""
	}
	b.WriteString(paint(style, run))
	return b.String()
}

// View draws the header and the visible rows, padded to the table's height.
func (t table) View() string {
	shown, widths, gap := t.layout()
	sep := strings.Repeat(" ", gap)
	fitted := func(cells []string) []string {
		parts := make([]string, len(shown))
		for j, i := range shown {
			var c string
			if i < len(cells) {
				c = cells[i]
			}
			parts[j] = fit(c, widths[j], t.cols[i].right)
		}
		return parts
	}
	line := func(cells []string) string { return strings.Join(fitted(cells), sep) }

	titles := make([]string, len(t.cols))
	for i, c := range t.cols {
		titles[i] = c.title
	}
	lines := []string{"  " + t.st.colHeader.Render(line(titles))}
	if len(t.rows) == 0 {
		lines = append(lines, "  "+t.st.dim.Render(t.empty))
	}
	end := min(len(t.rows), t.offset+t.visible())
	for i := t.offset; i < end; i++ {
		r := t.rows[i]
		if r.note {
			lines = append(lines, "  "+t.st.dim.Render(r.cells[0]))
			continue
		}
		selected := i == t.cursor
		gutter, style := t.rowStyle(r, selected)
		lines = append(lines, gutter+t.paintCells(fitted(r.cells), t.cellStyles(r, shown, selected), style, sep))
	}
	for len(lines) < t.height {
		lines = append(lines, "")
	}
	return strings.Join(lines[:max(1, min(len(lines), t.height))], "\n")
}
