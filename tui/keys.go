package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
)

// keyMap is every key binding of the dashboard, in one place.
type keyMap struct {
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding
	NextTab  key.Binding
	PrevTab  key.Binding
	Filter   key.Binding
	Clear    key.Binding
	Help     key.Binding
	Quit     key.Binding
	Sort     key.Binding
	Delete   key.Binding
	Pause    key.Binding
	Open     key.Binding
	// Yes confirms an action that asks first; any other key cancels it.
	Yes key.Binding

	// While the filter is being typed, only these act; every other key
	// goes to the text input (so that "q" can be typed).
	Accept    key.Binding
	Cancel    key.Binding
	ForceQuit key.Binding
}

func defaultKeyMap() keyMap {
	return keyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "bottom")),
		NextTab:  key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		PrevTab:  key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous view")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Clear:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Sort:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort jobs by")),
		Delete:   key.NewBinding(key.WithKeys("d", "delete"), key.WithHelp("d", "delete job")),
		Pause:    key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume cron")),
		Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "cron entries")),
		Yes:      key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes")),

		Accept:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep filter")),
		Cancel:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
	}
}

// ShortHelp is the one-line help bar.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.NextTab, k.Filter, k.Help, k.Quit}
}

// FullHelp is the help shown by "?".
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top},
		{k.Bottom, k.NextTab, k.PrevTab, k.Filter, k.Clear},
		{k.Sort, k.Delete, k.Pause, k.Open, k.Help, k.Quit},
	}
}

// KeyHelp lists every key of the dashboard, one per line, for
// `zizq top --help` (and so its man page).
func KeyHelp() string {
	k := defaultKeyMap()
	var b strings.Builder
	for _, col := range k.FullHelp() {
		for _, kb := range col {
			h := kb.Help()
			fmt.Fprintf(&b, "  %-10s %s\n", h.Key, h.Desc)
		}
	}
	fmt.Fprintf(&b, "  %-10s %s\n", "y", "confirm a deletion (any other key cancels it)")
	return b.String()
}

// filterKeys is the help shown while the filter is being typed.
type filterKeys struct{ k keyMap }

func (f filterKeys) ShortHelp() []key.Binding {
	return []key.Binding{f.k.Accept, f.k.Cancel, f.k.ForceQuit}
}

func (f filterKeys) FullHelp() [][]key.Binding { return [][]key.Binding{f.ShortHelp()} }
