package tui

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"
)

// styles is every style of the dashboard, in one place. Styles render full
// colour; Bubble Tea brings them down to what the terminal can show, and
// View strips them all under NoColor.
type styles struct {
	title     lipgloss.Style
	dim       lipgloss.Style
	ok        lipgloss.Style
	warn      lipgloss.Style
	bad       lipgloss.Style
	tab       lipgloss.Style
	tabActive lipgloss.Style
	colHeader lipgloss.Style
	selected  lipgloss.Style
	parked    lipgloss.Style
	parkedSel lipgloss.Style
	rule      lipgloss.Style
	label     lipgloss.Style
	help      help.Styles
	input     textinput.Styles
	// debt draws a level below zero (a budget that owes tokens), in the
	// row's cell alone; debtSel on the selected row.
	debt    lipgloss.Style
	debtSel lipgloss.Style
	// warnSel is warn on the selected row (a budget that backs off).
	warnSel lipgloss.Style
}

// palette is one colour for a light background and one for a dark one.
type palette struct{ light, dark string }

var (
	colorAccent = palette{light: "#5A3FC0", dark: "#9F8CFF"}
	colorOK     = palette{light: "#1F7A1F", dark: "#5FD75F"}
	colorWarn   = palette{light: "#B35900", dark: "#FFAF00"}
	colorBad    = palette{light: "#C00000", dark: "#FF5F5F"}
	colorDim    = palette{light: "#8A8A8A", dark: "#767676"}
	colorSelBg  = palette{light: "#D7D7FF", dark: "#3A3A5F"}
)

// newStyles returns the styles for a terminal with a dark background, or a
// light one. The dashboard starts dark and asks the terminal once (see
// Model.Init): a terminal that never answers keeps the dark colours.
func newStyles(dark bool) styles {
	pick := lipgloss.LightDark(dark)
	c := func(p palette) color.Color { return pick(lipgloss.Color(p.light), lipgloss.Color(p.dark)) }
	s := lipgloss.NewStyle
	dim := s().Foreground(c(colorDim))
	prompt := s().Bold(true).Foreground(c(colorAccent))
	input := textinput.StyleState{Text: s(), Placeholder: dim, Suggestion: dim, Prompt: prompt}
	return styles{
		title:     s().Bold(true).Foreground(c(colorAccent)),
		dim:       dim,
		ok:        s().Foreground(c(colorOK)),
		warn:      s().Foreground(c(colorWarn)),
		bad:       s().Bold(true).Foreground(c(colorBad)),
		tab:       dim,
		tabActive: s().Bold(true).Foreground(c(colorAccent)),
		colHeader: s().Bold(true).Underline(true),
		selected:  s().Background(c(colorSelBg)).Bold(true),
		parked:    s().Foreground(c(colorWarn)),
		parkedSel: s().Foreground(c(colorWarn)).Background(c(colorSelBg)).Bold(true),
		debt:      s().Bold(true).Foreground(c(colorBad)),
		debtSel:   s().Bold(true).Foreground(c(colorBad)).Background(c(colorSelBg)),
		warnSel:   s().Bold(true).Foreground(c(colorWarn)).Background(c(colorSelBg)),
		rule:      dim,
		label:     dim,
		help: help.Styles{
			Ellipsis:       dim,
			ShortKey:       s().Bold(true),
			ShortDesc:      dim,
			ShortSeparator: dim,
			FullKey:        s().Bold(true),
			FullDesc:       dim,
			FullSeparator:  dim,
		},
		// A steady block cursor drawn in reverse video, as the text
		// input draws it; it never blinks, so that nothing redraws the
		// screen between polls.
		input: textinput.Styles{Focused: input, Blurred: input, Cursor: textinput.CursorStyle{Blink: false}},
	}
}
