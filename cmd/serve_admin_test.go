package cmd_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/cmd"
)

// An admin port already in use (the default 8901 when a second server
// starts on the machine) fails the start with a message that names the
// flags choosing another port or none, on SQLite and in a cluster alike.
func TestServe_AdminPortInUse(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() }) // the subtests run after this function returns
	port := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"SQLite", []string{"--root-dir", t.TempDir()}},
		{"Cluster", []string{"--database-url", "postgres://nobody@127.0.0.1:1/none"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", port}, c.args...)
			requireFails(t, runZizq(t, "", args...), cmd.ExitFailure,
				"address already in use: the admin port "+port+" is taken (another zizq server?): choose a free one with --admin-port (0 picks one), or run without it with --no-admin")
		})
	}
}
