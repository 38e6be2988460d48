package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/store/sqlite"
)

// setFileSizeLimit sets the soft RLIMIT_FSIZE of a running process with
// prlimit(1) ("unlimited" lifts it).
func setFileSizeLimit(t *testing.T, pid int, limit string) {
	t.Helper()
	out, err := exec.Command("prlimit", "--pid", strconv.Itoa(pid), "--fsize="+limit+":").CombinedOutput()
	require.NoError(t, err, "prlimit: %s", out)
}

// TestDiskFull_FileSizeLimit fills the real server's disk as far as it is
// concerned: a file-size limit on the process makes the database's writes
// fail with EFBIG. Writes then answer 503 "storage unavailable", reads go
// on, writes work again once the limit is lifted, and after a kill -9 and a
// restart every acknowledged enqueue is there and no refused one is.
func TestDiskFull_FileSizeLimit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p, _ := startServerStderr(t, "--root-dir", root)
	enqueue := func(i int) (int, []byte) {
		status, body, err := tryDo("POST", p.url+"/jobs", map[string]any{
			"type": "t", "queue": "q", "payload": map[string]any{"i": i, "pad": strings.Repeat("x", 16<<10)},
		})
		require.NoError(t, err)
		return status, body
	}
	var acked []string
	ack := func(body []byte) {
		var j api.Job
		require.NoError(t, json.Unmarshal(body, &j))
		acked = append(acked, j.ID)
	}
	for i := range 5 {
		status, body := enqueue(i)
		require.Equal(t, http.StatusCreated, status, "%s", body)
		ack(body)
	}

	// The limit: a little above the largest database file now.
	var largest int64
	for _, name := range []string{sqlite.FileName, sqlite.FileName + "-wal"} {
		if st, err := os.Stat(filepath.Join(root, "data", name)); err == nil {
			largest = max(largest, st.Size())
		}
	}
	setFileSizeLimit(t, p.cmd.Process.Pid, strconv.FormatInt(largest+128<<10, 10))
	refused := 0
	for i := 5; i < 2000 && refused < 3; i++ {
		status, body := enqueue(i)
		switch status {
		case http.StatusCreated:
			require.Zero(t, refused, "an enqueue succeeded after one was refused, with the limit still on")
			ack(body)
		case http.StatusServiceUnavailable:
			refused++
			var e api.Error
			require.NoError(t, json.Unmarshal(body, &e))
			require.True(t, strings.HasPrefix(e.Error, "storage unavailable: "), "%s", body)
			if refused == 1 {
				t.Logf("enqueue %d refused: %s", i, e.Error)
			}
		default:
			t.Fatalf("enqueue %d: %d %s", i, status, body)
		}
	}
	require.Equal(t, 3, refused, "the file-size limit was never hit")

	// Reads go on.
	status, body := do(t, "GET", p.url+"/jobs/count", nil)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, fmt.Sprintf(`{"count":%d}`, len(acked)), string(body))
	status, _ = do(t, "GET", p.url+"/jobs/"+acked[0], nil)
	require.Equal(t, http.StatusOK, status)

	// Space again: writes work.
	setFileSizeLimit(t, p.cmd.Process.Pid, "unlimited")
	status, body = enqueue(-1)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	ack(body)

	p.kill()
	db, err := sqlite.Open(context.Background(), filepath.Join(root, "data"), sqlite.Options{})
	require.NoError(t, err)
	require.NoError(t, db.IntegrityCheck(context.Background()))
	require.NoError(t, db.Close())
	p = startServer(t, "--root-dir", root)
	jobs := allJobs(t, p.url)
	require.Len(t, jobs, len(acked), "exactly the acknowledged enqueues")
	for _, id := range acked {
		require.Contains(t, jobs, id)
	}
}
