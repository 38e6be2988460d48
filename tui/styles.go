package tui

import (
	"io"
	"os"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// styles is every style of the dashboard, in one place, all made by one
// renderer so that NO_COLOR (an Ascii profile) strips them all.
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
	prompt    lipgloss.Style
	input     lipgloss.Style
	cursor    lipgloss.Style
	help      help.Styles
}

var (
	colorAccent = lipgloss.AdaptiveColor{Light: "#5A3FC0", Dark: "#9F8CFF"}
	colorOK     = lipgloss.AdaptiveColor{Light: "#1F7A1F", Dark: "#5FD75F"}
	colorWarn   = lipgloss.AdaptiveColor{Light: "#B35900", Dark: "#FFAF00"}
	colorBad    = lipgloss.AdaptiveColor{Light: "#C00000", Dark: "#FF5F5F"}
	colorDim    = lipgloss.AdaptiveColor{Light: "#8A8A8A", Dark: "#767676"}
	colorSelBg  = lipgloss.AdaptiveColor{Light: "#D7D7FF", Dark: "#3A3A5F"}
)

// newRenderer returns the renderer for the terminal on stdout, or one that
// renders plain text when noColor is set. The terminal's own renderer also
// honours the NO_COLOR environment variable.
func newRenderer(noColor bool) *lipgloss.Renderer {
	if noColor {
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(termenv.Ascii)
		return r
	}
	r := lipgloss.NewRenderer(os.Stdout)
	// Ask the terminal now, before Bubble Tea owns its input: a background
	// colour query answered while the program reads keys would arrive as
	// keys.
	r.ColorProfile()
	r.HasDarkBackground()
	return r
}

func newStyles(r *lipgloss.Renderer) styles {
	s := r.NewStyle
	dim := s().Foreground(colorDim)
	return styles{
		title:     s().Bold(true).Foreground(colorAccent),
		dim:       dim,
		ok:        s().Foreground(colorOK),
		warn:      s().Foreground(colorWarn),
		bad:       s().Bold(true).Foreground(colorBad),
		tab:       dim,
		tabActive: s().Bold(true).Foreground(colorAccent),
		colHeader: s().Bold(true).Underline(true),
		selected:  s().Background(colorSelBg).Bold(true),
		parked:    s().Foreground(colorWarn),
		parkedSel: s().Foreground(colorWarn).Background(colorSelBg).Bold(true),
		rule:      dim,
		label:     dim,
		prompt:    s().Bold(true).Foreground(colorAccent),
		input:     s(),
		cursor:    s().Reverse(true),
		help: help.Styles{
			Ellipsis:       dim,
			ShortKey:       s().Bold(true),
			ShortDesc:      dim,
			ShortSeparator: dim,
			FullKey:        s().Bold(true),
			FullDesc:       dim,
			FullSeparator:  dim,
		},
	}
}
