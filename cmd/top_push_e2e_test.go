package cmd_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// The dashboard on the admin port's event stream, in a real terminal
// against a real server.

// enqueueBulk enqueues n jobs of type typ in queue q and returns their IDs
// in order (the ready list's order: one priority, IDs in time order).
func enqueueBulk(t *testing.T, url, q, typ string, n int) []string {
	t.Helper()
	jobs := make([]map[string]any, n)
	for i := range jobs {
		jobs[i] = map[string]any{"type": typ, "queue": q, "payload": i}
	}
	status, body := do(t, "POST", url+"/jobs/bulk", map[string]any{"jobs": jobs})
	require.Equal(t, http.StatusCreated, status, "%s", body)
	var resp struct{ Jobs []api.Job }
	require.NoError(t, json.Unmarshal(body, &resp))
	ids := make([]string, n)
	for i, j := range resp.Jobs {
		ids[i] = j.ID
	}
	return ids
}

// toReady opens the Ready tab of a live dashboard.
func (tm *tmux) toReady() {
	tm.t.Helper()
	tm.waitFor("the event stream", 15*time.Second, func(s string) bool { return strings.Contains(s, "● connected live") })
	tm.run("send-keys", "-t", "top", "Tab", "Tab", "Tab")
	tm.waitFor("the Ready tab", 15*time.Second, func(s string) bool { return strings.Contains(s, "[Ready") })
}

// TestTop_Push: with an hour between polls, a job enqueued shows up at
// once: the event stream pushed it.
func TestTop_Push(t *testing.T) {
	tm := newTmux(t)
	p := startServer(t, "--root-dir", t.TempDir())
	tm.start(p.url, "--admin-url", p.admin, "--refresh", "1h")
	tm.toReady()
	tm.waitFor("the empty list", 15*time.Second, func(s string) bool { return strings.Contains(s, "no ready or parked jobs") })

	id := enqueueBulk(t, p.url, "work", "pushed_job", 1)[0]
	tm.waitFor("the pushed job", 15*time.Second, func(s string) bool {
		return strings.Contains(s, id) && strings.Contains(s, "pushed_job") && strings.Contains(s, "[Ready 1 · parked 0]")
	})
	tm.quit()
}

// TestTop_ScrollsPastWindow: 300 ready jobs, windows of 200: the bottom
// key asks for the tail's window, the top key for the head's.
func TestTop_ScrollsPastWindow(t *testing.T) {
	tm := newTmux(t)
	p := startServer(t, "--root-dir", t.TempDir())
	ids := enqueueBulk(t, p.url, "work", "t", 300)
	tm.start(p.url, "--admin-url", p.admin, "--refresh", "1h")
	tm.toReady()
	tm.waitFor("the head window", 15*time.Second, func(s string) bool {
		return strings.Contains(s, "rows 1–200 of 300") && strings.Contains(s, "> "+ids[0])
	})

	tm.run("send-keys", "-t", "top", "End")
	tm.waitFor("the tail window, the cursor on the last job", 15*time.Second, func(s string) bool {
		return strings.Contains(s, "rows 101–300 of 300") && strings.Contains(s, "> "+ids[299])
	})
	tm.run("send-keys", "-t", "top", "Home")
	tm.waitFor("the head window again", 15*time.Second, func(s string) bool {
		return strings.Contains(s, "rows 1–200 of 300") && strings.Contains(s, "> "+ids[0])
	})
	tm.quit()
}

// TestTop_DeleteConfirms: d asks, n keeps the job, d then y deletes it.
func TestTop_DeleteConfirms(t *testing.T) {
	tm := newTmux(t)
	p := startServer(t, "--root-dir", t.TempDir())
	ids := enqueueBulk(t, p.url, "work", "t", 2)
	tm.start(p.url, "--admin-url", p.admin, "--refresh", "1h")
	tm.toReady()
	tm.waitFor("both jobs", 15*time.Second, func(s string) bool { return strings.Contains(s, "> "+ids[0]) && strings.Contains(s, ids[1]) })

	tm.run("send-keys", "-t", "top", "d")
	tm.waitFor("the question", 15*time.Second, func(s string) bool { return strings.Contains(s, "delete job "+ids[0]+"?") })
	tm.run("send-keys", "-t", "top", "n")
	tm.waitFor("cancelled", 15*time.Second, func(s string) bool { return strings.Contains(s, "cancelled") })
	status, _ := do(t, "GET", p.url+"/jobs/"+ids[0], nil)
	require.Equal(t, http.StatusOK, status, "n keeps the job")

	tm.run("send-keys", "-t", "top", "d")
	tm.waitFor("the question again", 15*time.Second, func(s string) bool { return strings.Contains(s, "delete job "+ids[0]+"?") })
	tm.run("send-keys", "-t", "top", "y")
	tm.waitFor("the job gone", 15*time.Second, func(s string) bool {
		return !strings.Contains(s, "  "+ids[0]) && !strings.Contains(s, "> "+ids[0]) && strings.Contains(s, ids[1])
	})
	status, _ = do(t, "GET", p.url+"/jobs/"+ids[0], nil)
	require.Equal(t, http.StatusNotFound, status)
	tm.quit()
}

// TestTop_FallsBackToPolling: no admin port where --admin-url says: the
// header says so, and the lists are polled.
func TestTop_FallsBackToPolling(t *testing.T) {
	tm := newTmux(t)
	p := startServer(t, "--root-dir", t.TempDir())
	closed := closedPort(t)
	tm.start(p.url, "--admin-url", closed, "--refresh", "200ms")
	tm.waitFor("the fallback", 15*time.Second, func(s string) bool {
		return strings.Contains(s, "polling every 200ms: no event stream at "+closed)
	})
	tm.run("send-keys", "-t", "top", "Tab", "Tab", "Tab")
	id := enqueueBulk(t, p.url, "work", "polled_job", 1)[0]
	tm.waitFor("the polled job", 15*time.Second, func(s string) bool { return strings.Contains(s, id) && strings.Contains(s, "polled_job") })
	tm.quit()
}

// closedPort is the URL of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return fmt.Sprintf("http://%s", addr)
}

// TestTop_PausesCronEntry: enter lists a group's entries, p pauses the
// selected one on the server.
func TestTop_PausesCronEntry(t *testing.T) {
	tm := newTmux(t)
	p := startServer(t, "--root-dir", t.TempDir())
	status, body := do(t, "PUT", p.url+"/crons/nightly", map[string]any{"entries": []map[string]any{
		{"name": "report", "expression": "0 3 * * *", "job": map[string]any{"type": "report", "queue": "cron", "payload": nil}},
	}})
	require.Equal(t, http.StatusOK, status, "%s", body)
	tm.start(p.url, "--admin-url", p.admin, "--refresh", "200ms")
	tm.waitFor("the event stream", 15*time.Second, func(s string) bool { return strings.Contains(s, "● connected live") })
	tm.run("send-keys", "-t", "top", "BTab")
	tm.waitFor("the cron group", 15*time.Second, func(s string) bool { return strings.Contains(s, "> nightly") })
	tm.run("send-keys", "-t", "top", "Enter")
	tm.waitFor("its entry", 15*time.Second, func(s string) bool { return strings.Contains(s, "└ report") })
	tm.run("send-keys", "-t", "top", "j", "p")
	tm.waitFor("the entry paused", 15*time.Second, func(s string) bool {
		return strings.Contains(s, "paused cron entry nightly/report") && strings.Contains(s, "└ report  paused")
	})
	status, body = do(t, "GET", p.url+"/crons/nightly", nil)
	require.Equal(t, http.StatusOK, status)
	var g api.CronGroup
	require.NoError(t, json.Unmarshal(body, &g))
	require.True(t, g.Entries[0].Paused, "%s", body)
	tm.quit()
}
