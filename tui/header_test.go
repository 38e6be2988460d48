package tui

import (
	"errors"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"
)

// The header says which node of a cluster answers and its role there,
// and the process's uptime, with how long a leader has led its term.
func TestModel_View_ClusterNode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		role       string
		node       string
		want, gone []string
	}{
		{"Follower", "follower", "http://127.0.0.1:7890",
			[]string{"follower of http://10.0.0.2:7890", "up 1h02m"}, []string{"node ", "leading"}},
		{"LeaderBehindABalancer", "leader", "http://10.0.0.2:7890",
			[]string{"node http://10.0.0.2:7890", "leader, term 4", "up 1h02m (leading 5m00s)"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := newFakeSource()
			st := fixtureStats()
			st.Role, st.Leader, st.Term, st.Node, st.TermMs = c.role, "http://10.0.0.2:7890", 4, c.node, 300_000
			src.setStats(st)
			header := strings.Split(screen(newTestModel(t, src, 200, 30)), "\n")[0]
			for _, w := range c.want {
				require.Contains(t, header, w)
			}
			for _, g := range c.gone {
				require.NotContains(t, header, g)
			}
		})
	}
}

// A lone server's header names no role.
func TestModel_View_LoneServerNoRole(t *testing.T) {
	t.Parallel()
	header := strings.Split(screen(newTestModel(t, newFakeSource(), 200, 30)), "\n")[0]
	require.NotContains(t, header, "leader")
	require.NotContains(t, header, "follower")
	require.Contains(t, header, "up 1h02m")
}

// The reason the event stream is down is shown whole, wrapped, however
// long it is (a follower's names the leader's admin port at its end).
func TestModel_View_StreamDownReasonWhole(t *testing.T) {
	t.Parallel()
	m, fs := newLiveModel(t, newFakeSource(), 3)
	m = update(t, m, frameMsg{stream: fs, err: errors.New("open the event stream: 503 Service Unavailable: " +
		"this server is a follower: use the admin port of the leader, http://10.0.0.2:8901 (the leader's API is http://10.0.0.2:7890)")})
	for _, width := range []int{120, 80, 50} {
		m = update(t, m, tea.WindowSizeMsg{Width: width, Height: 30})
		s := screen(m)
		flat := strings.Join(strings.Fields(s), " ")
		require.Contains(t, flat, "use the admin port of the leader, http://10.0.0.2:8901 (the leader's API is http://10.0.0.2:7890)", "at width %d:\n%s", width, s)
		for _, l := range strings.Split(s, "\n") {
			require.False(t, strings.HasSuffix(l, "…") && strings.Contains(l, "admin port"), "the reason is cut at width %d: %q", width, l)
		}
	}
}
