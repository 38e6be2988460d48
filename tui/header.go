package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// serverParts are the header's words about the server that answers: in a
// cluster, which node it is and its role there (a follower shows the
// leader's figures), then its version, process uptime (with, on a
// cluster's leader, how long it has led its term) and memory.
func (m *Model) serverParts() []string {
	st := m.stats
	var parts []string
	if st.Node != "" && st.Node != m.opts.URL {
		parts = append(parts, "node "+st.Node)
	}
	switch {
	case st.Role == "follower" && st.Leader != "":
		parts = append(parts, "follower of "+st.Leader)
	case st.Role == "follower":
		parts = append(parts, "follower")
	case st.Term > 0:
		parts = append(parts, "leader, term "+strconv.FormatInt(st.Term, 10))
	}
	parts = append(parts, "v"+strings.TrimPrefix(st.Version, "v"))
	up := "up " + fmtMs(st.UptimeMs)
	if st.Role == "leader" && st.Term > 0 && st.TermMs > 0 {
		up += " (leading " + fmtMs(st.TermMs) + ")"
	}
	parts = append(parts, up)
	if st.RSSBytes > 0 {
		parts = append(parts, "rss "+fmtBytes(st.RSSBytes))
	}
	return parts
}

// streamDownLines say why the lists are polled: the event stream's
// failure, whole, over as many lines as the screen's width needs (a
// follower's reason names the leader's admin port, which must not be cut
// off).
func (m *Model) streamDownLines() []string {
	why := m.st.warn.Render("polling every "+fmtAge(m.opts.Refresh)+": no event stream at "+m.opts.AdminURL+": ") + oneLine(m.push.err)
	return strings.Split(ansi.Wrap(why, max(1, m.width), " "), "\n")
}
