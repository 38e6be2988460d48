package cmd_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
)

func TestJobEnqueue_StartBy(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	by := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	var j api.Job
	c.json(&j, "job", "enqueue", "-q", "q", "-t", "t", "--start-by", by.Format(time.RFC3339))
	require.Equal(t, uint64(by.UnixMilli()), j.StartBy)
	j = api.Job{}
	c.json(&j, "job", "enqueue", "-q", "q", "-t", "t", "--start-by", strconv.FormatInt(by.UnixMilli()+1, 10))
	require.Equal(t, uint64(by.UnixMilli()+1), j.StartBy)
	j = api.Job{}
	c.json(&j, "job", "enqueue", "-q", "q", "-t", "t", "--start-within", "90s")
	require.Equal(t, j.ReadyAt+90_000, j.StartBy, "the server counts it from the enqueue")
	id := strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t", "--start-within", "1d", "--in", "1h"))
	j = api.Job{}
	c.json(&j, "job", "get", id)
	require.Equal(t, api.StatusScheduled, j.Status)
	require.InDelta(t, time.Now().Add(24*time.Hour).UnixMilli(), int64(j.StartBy), 5000)

	for _, tc := range []struct {
		msg  string
		args []string
	}{
		{"--start-by and --start-within cannot be used together", []string{"--start-by", "1", "--start-within", "1s"}},
		{`invalid --start-by "tomorrow"`, []string{"--start-by", "tomorrow"}},
		{`invalid duration "soon"`, []string{"--start-within", "soon"}},
		{"--start-within must be at least 1ms, got 0s", []string{"--start-within", "0s"}},
		{"--start-within must be at least 1ms, got 500µs", []string{"--start-within", "500us"}},
	} {
		c.fails(cmd.ExitUsage, tc.msg, append([]string{"job", "enqueue", "-q", "q", "-t", "t"}, tc.args...)...)
	}
	// The server's refusal of a time that has passed.
	c.fails(cmd.ExitFailure, "start_by must be in the future: the job would die at once",
		"job", "enqueue", "-q", "q", "-t", "t", "--start-by", "2020-01-01T00:00:00Z")
}

func TestJobBulk_StartBy(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	own := time.Now().Add(2 * time.Hour).UnixMilli()
	in := strings.Join([]string{
		`{"payload":1}`,
		fmt.Sprintf(`{"payload":2,"start_by":%d}`, own),
		`{"payload":3,"start_within_ms":5000}`,
	}, "\n") + "\n"
	r := c.runIn(in, "job", "bulk", "-q", "q", "-t", "t", "--start-within", "1m")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	ids := lines(r.out)
	require.Len(t, ids, 3)
	jobs := make([]api.Job, 3)
	for i, id := range ids {
		c.json(&jobs[i], "job", "get", id)
	}
	require.Equal(t, jobs[0].ReadyAt+60_000, jobs[0].StartBy, "the flag fills in a line without one")
	require.Equal(t, uint64(own), jobs[1].StartBy, "a line's own is kept")
	require.Equal(t, jobs[2].ReadyAt+5000, jobs[2].StartBy)

	c.fails(cmd.ExitUsage, "--start-by and --start-within cannot be used together",
		"job", "bulk", "-q", "q", "-t", "t", "--start-by", "1", "--start-within", "1s")
	c.fails(cmd.ExitUsage, "--start-within must be at least 1ms", "job", "bulk", "-q", "q", "-t", "t", "--start-within", "0s")
}
