package cmd_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
)

// The worker, `zizq work`, as its own process (the binary) against a real
// server: the commands it runs write what they saw into files.

// workProc is a running `zizq work`.
type workProc struct {
	t        *testing.T
	cmd      *exec.Cmd
	out, err *lockedBuffer
	done     chan struct{}
	code     int
}

// startWork runs `zizq work --url url args...`.
func startWork(t *testing.T, url string, args ...string) *workProc {
	t.Helper()
	w := &workProc{t: t, out: &lockedBuffer{}, err: &lockedBuffer{}, done: make(chan struct{})}
	w.cmd = exec.Command(zizqBin, append([]string{"work", "--url", url}, args...)...)
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.err
	require.NoError(t, w.cmd.Start())
	go func() {
		err := w.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			w.code = ee.ExitCode()
		}
		close(w.done)
	}()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	})
	return w
}

// wait waits for the worker to exit and returns its exit code.
func (w *workProc) wait(d time.Duration) int {
	w.t.Helper()
	select {
	case <-w.done:
		return w.code
	case <-time.After(d):
		w.t.Fatalf("zizq work did not exit within %s\nstdout:\n%s\nstderr:\n%s", d, w.out, w.err)
		return -1
	}
}

// waitOut waits until the worker's standard output holds n lines
// containing s.
func (w *workProc) waitOut(s string, n int, d time.Duration) {
	w.t.Helper()
	require.Eventually(w.t, func() bool { return strings.Count(w.out.String(), s) >= n }, d, 20*time.Millisecond,
		"waiting for %d × %q\nstdout:\n%s\nstderr:\n%s", n, s, w.out, w.err)
}

func (w *workProc) signal(s syscall.Signal) { require.NoError(w.t, w.cmd.Process.Signal(s)) }

// workEvent is a line of `zizq work -o json`.
type workEvent struct {
	Time       time.Time     `json:"time"`
	Event      string        `json:"event"`
	ID         string        `json:"id"`
	Type       string        `json:"type"`
	Queue      string        `json:"queue"`
	Attempts   *uint32       `json:"attempts"`
	PID        int           `json:"pid"`
	Status     *int          `json:"status"`
	Signal     string        `json:"signal"`
	Message    string        `json:"message"`
	DurationMs *int64        `json:"duration_ms"`
	Running    *int          `json:"running"`
	Budgets    []api.Settle  `json:"budgets"`
	Throttle   *api.Throttle `json:"throttle"`
	Warning    string        `json:"warning"`
}

func (w *workProc) events() []workEvent {
	w.t.Helper()
	var evs []workEvent
	for _, l := range lines(w.out.String()) {
		if l == "" {
			continue
		}
		var e workEvent
		require.NoError(w.t, json.Unmarshal([]byte(l), &e), "line %q", l)
		evs = append(evs, e)
	}
	return evs
}

func getJob(t *testing.T, url, id string) (api.Job, int) {
	t.Helper()
	status, body := do(t, "GET", url+"/jobs/"+id, nil)
	var j api.Job
	if status == http.StatusOK {
		require.NoError(t, json.Unmarshal(body, &j))
	}
	return j, status
}

func jobErrors(t *testing.T, url, id string) []api.ErrorRecord {
	t.Helper()
	status, body := do(t, "GET", url+"/jobs/"+id+"/errors", nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var l api.ErrorList
	require.NoError(t, json.Unmarshal(body, &l))
	return l.Errors
}

func countJobs(t *testing.T, url, query string) int {
	t.Helper()
	status, body := do(t, "GET", url+"/jobs/count?"+query, nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var c api.Count
	require.NoError(t, json.Unmarshal(body, &c))
	return int(c.Count)
}

// readLines reads a file the commands append to (missing: none).
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(b))
}

// span is when one command ran, from the timestamps it wrote itself.
type span struct{ start, end int64 }

// timedScript is a command that writes "ID start NS" and "ID end NS" into
// log around a sleep of secs.
func timedScript(log string, secs string) []string {
	return []string{"--", "sh", "-c", fmt.Sprintf(`echo "$ZIZQ_JOB_ID start $(date +%%s%%N)" >> %[1]s; sleep %[2]s; echo "$ZIZQ_JOB_ID end $(date +%%s%%N)" >> %[1]s`, log, secs)}
}

// spans reads a timedScript log.
func spans(t *testing.T, log string) map[string]*span {
	t.Helper()
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	out := map[string]*span{}
	for _, l := range lines(string(b)) {
		f := strings.Fields(l)
		require.Len(t, f, 3, "line %q", l)
		ns, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err)
		s := out[f[0]]
		if s == nil {
			s = &span{}
			out[f[0]] = s
		}
		if f[1] == "start" {
			require.Zero(t, s.start, "job %s started twice", f[0])
			s.start = ns
		} else {
			s.end = ns
		}
	}
	return out
}

// maxOverlap is the most spans open at one instant.
func maxOverlap(t *testing.T, ss map[string]*span) int {
	t.Helper()
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for id, s := range ss {
		require.NotZero(t, s.end, "job %s did not end", id)
		edges = append(edges, edge{s.start, 1}, edge{s.end, -1})
	}
	// At equal times an end comes first: a command that ended as another
	// began did not overlap it.
	sort.Slice(edges, func(i, j int) bool {
		return edges[i].at < edges[j].at || edges[i].at == edges[j].at && edges[i].delta < edges[j].delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// TestWork_Success: each job's command gets the payload as JSON on
// standard input and the job in its environment; exit 0 completes the job,
// its output goes to standard error prefixed with the job's ID, and the
// text events name the job and its process.
func TestWork_Success(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	dir := t.TempDir()
	ids := enqueueBulk(t, url, "mail", "send", 3)
	w := startWork(t, url, "--queue", "mail", "--drain", "--", "sh", "-c",
		`cat > `+dir+`/$ZIZQ_JOB_ID.json; env | grep -E '^ZIZQ_(JOB_[A-Z]+|URL)=' | sort > `+dir+`/$ZIZQ_JOB_ID.env; echo "hello from $ZIZQ_JOB_ID"`)
	require.Equal(t, cmd.ExitOK, w.wait(30*time.Second), "stderr: %s", w.err)
	for i, id := range ids {
		payload, err := os.ReadFile(filepath.Join(dir, id+".json"))
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(i), string(payload))
		env, err := os.ReadFile(filepath.Join(dir, id+".env"))
		require.NoError(t, err)
		require.Equal(t, "ZIZQ_JOB_ATTEMPTS=0\nZIZQ_JOB_ID="+id+"\nZIZQ_JOB_PRIORITY=32768\nZIZQ_JOB_QUEUE=mail\nZIZQ_JOB_TYPE=send\nZIZQ_URL="+url+"\n", string(env))
		require.Contains(t, w.err.String(), id+": hello from "+id+"\n")
		require.Regexp(t, `(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d): Job `+id+` running in process \d+$`, w.out.String())
		require.Regexp(t, `(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d): Job `+id+` exited with status 0$`, w.out.String())
		_, status := getJob(t, url, id)
		require.Equal(t, http.StatusNotFound, status, "completed, and deleted at once (no retention)")
	}
}

// TestWork_FailureWithStderr: a non-zero exit fails the job with "exit
// status N" and the last 4 KiB of its standard error; the JSON events
// carry the status and the message. A command that does not exist fails
// each job with exec's error, and the worker goes on.
func TestWork_FailureWithStderr(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	ids := enqueueBulk(t, url, "q", "t", 2)
	// 5,000 bytes of x, then "the end": the backtrace is the last 4,096.
	w := startWork(t, url, "-q", "q", "--drain", "-o", "json", "--", "sh", "-c",
		`echo first line >&2; head -c 5000 /dev/zero | tr '\0' x >&2; echo "the end" >&2; exit 7`)
	require.Equal(t, cmd.ExitOK, w.wait(30*time.Second), "stderr: %s", w.err)
	for _, id := range ids {
		j, status := getJob(t, url, id)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, api.StatusScheduled, j.Status, "the server's backoff applies")
		errs := jobErrors(t, url, id)
		require.Len(t, errs, 1)
		require.Equal(t, "exit status 7", errs[0].Message)
		require.Len(t, errs[0].Backtrace, 4096)
		require.True(t, strings.HasSuffix(errs[0].Backtrace, "xxxxthe end\n"))
		require.Contains(t, w.err.String(), id+": first line\n")
		require.Contains(t, w.err.String(), "xthe end\n")
	}
	evs := w.events()
	require.Len(t, evs, 4)
	for _, e := range evs {
		require.Contains(t, ids, e.ID)
		require.Equal(t, "q", e.Queue)
		require.NotZero(t, e.PID)
		switch e.Event {
		case "started":
			require.NotNil(t, e.Attempts)
			require.Zero(t, *e.Attempts)
		case "failed":
			require.NotNil(t, e.Status)
			require.Equal(t, 7, *e.Status)
			require.Equal(t, "exit status 7", e.Message)
			require.NotNil(t, e.DurationMs)
		default:
			t.Fatalf("unexpected event %+v", e)
		}
	}

	t.Run("NoSuchCommand", func(t *testing.T) {
		ids := enqueueBulk(t, url, "nosuch", "t", 2)
		w := startWork(t, url, "-q", "nosuch", "--drain", "--", "nosuch-command-zizq")
		require.Equal(t, cmd.ExitOK, w.wait(30*time.Second), "stderr: %s", w.err)
		for _, id := range ids {
			errs := jobErrors(t, url, id)
			require.Len(t, errs, 1)
			require.Contains(t, errs[0].Message, `exec: "nosuch-command-zizq": executable file not found`)
			require.Contains(t, w.out.String(), "Job "+id+" could not start: exec:")
		}
	})
}

// TestWork_Timeout: past --timeout the process group gets SIGTERM; a
// command that ignores it is killed with SIGKILL once --grace has passed,
// and the job fails "timed out after D".
func TestWork_Timeout(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	ids := enqueueBulk(t, url, "slow", "t", 1)
	began := time.Now()
	w := startWork(t, url, "-q", "slow", "--drain", "--timeout", "300ms", "--grace", "700ms", "-o", "json", "--",
		"sh", "-c", `trap "" TERM; sleep 30`)
	require.Equal(t, cmd.ExitOK, w.wait(30*time.Second), "stderr: %s", w.err)
	require.Less(t, time.Since(began), 20*time.Second, "sleep 30 was killed")
	errs := jobErrors(t, url, ids[0])
	require.Len(t, errs, 1)
	require.Equal(t, "timed out after 300ms", errs[0].Message)
	evs := w.events()
	require.Len(t, evs, 2)
	end := evs[1]
	require.Equal(t, "timed_out", end.Event)
	require.Equal(t, "SIGKILL", end.Signal, "SIGTERM was ignored")
	require.Nil(t, end.Status)
	require.GreaterOrEqual(t, *end.DurationMs, int64(1000), "the timeout, then the grace")
}

// TestWork_SigtermFinishesRunning: SIGTERM while 3 jobs run: they finish
// and are completed, nothing is requeued, the jobs the stream delivers
// after the signal never start and are ready again, and it exits 0.
func TestWork_SigtermFinishesRunning(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	dir := t.TempDir()
	ids := enqueueBulk(t, url, "q", "t", 6)
	w := startWork(t, url, "-q", "q", "--concurrency", "3", "--", "sh", "-c",
		`touch `+dir+`/$ZIZQ_JOB_ID.started; sleep 3; touch `+dir+`/$ZIZQ_JOB_ID.done`)
	w.waitOut("running in process", 3, 20*time.Second)
	w.signal(syscall.SIGTERM)
	require.Equal(t, cmd.ExitOK, w.wait(30*time.Second), "stderr: %s", w.err)
	require.Contains(t, w.out.String(), "SIGTERM received. Stopping: 3 running jobs may finish within 30s")
	var ran int
	for _, id := range ids {
		_, started := os.Stat(filepath.Join(dir, id+".started"))
		j, status := getJob(t, url, id)
		if started == nil {
			ran++
			require.FileExists(t, filepath.Join(dir, id+".done"), "it finished")
			require.Equal(t, http.StatusNotFound, status, "completed")
			continue
		}
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, api.StatusReady, j.Status, "never started, back to ready")
		require.Zero(t, j.Attempts)
	}
	require.Equal(t, 3, ran)
	require.Equal(t, 3, strings.Count(w.out.String(), "exited with status 0"))
}

// TestWork_GraceEnds: a command still running --grace after SIGTERM is
// killed and its job fails "worker stopped"; the worker exits 0.
func TestWork_GraceEnds(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	ids := enqueueBulk(t, url, "q", "t", 1)
	w := startWork(t, url, "-q", "q", "--grace", "300ms", "--", "sleep", "30")
	w.waitOut("running in process", 1, 20*time.Second)
	w.signal(syscall.SIGTERM)
	require.Equal(t, cmd.ExitOK, w.wait(20*time.Second), "stderr: %s", w.err)
	require.Contains(t, w.out.String(), "Job "+ids[0]+" killed: worker stopped")
	errs := jobErrors(t, url, ids[0])
	require.Len(t, errs, 1)
	require.Equal(t, "worker stopped", errs[0].Message)
}

// TestWork_SecondSignalKills: a second signal kills the commands at once;
// their jobs go back to ready without a failure, and it exits 1.
func TestWork_SecondSignalKills(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	ids := enqueueBulk(t, url, "q", "t", 1)
	w := startWork(t, url, "-q", "q", "--", "sleep", "30")
	w.waitOut("running in process", 1, 20*time.Second)
	w.signal(syscall.SIGINT)
	w.waitOut("SIGINT received", 1, 10*time.Second)
	w.signal(syscall.SIGINT)
	require.Equal(t, cmd.ExitFailure, w.wait(10*time.Second), "stderr: %s", w.err)
	require.Contains(t, w.err.String(), "1 running command killed")
	require.Eventually(t, func() bool {
		j, _ := getJob(t, url, ids[0])
		return j.Status == api.StatusReady
	}, 10*time.Second, 20*time.Millisecond)
	j, _ := getJob(t, url, ids[0])
	require.Zero(t, j.Attempts, "no failure recorded")
}

// TestWork_DrainWaitsForParked: --drain does not exit while jobs are
// parked behind a budget (they will come): it exits once they ran. A
// scheduled job does not keep it running, nor does a job whose budget is
// paused without an end.
func TestWork_DrainWaitsForParked(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	log := filepath.Join(t.TempDir(), "log")
	putBudget(t, url, "one", map[string]any{"allocation": 1, "strategy": map[string]any{"type": "while_in_flight"}})
	putBudget(t, url, "frozen", map[string]any{"allocation": 1, "strategy": map[string]any{"type": "while_in_flight"}, "paused": true})
	for range 3 {
		status, body := do(t, "POST", url+"/jobs", map[string]any{"type": "t", "queue": "work", "payload": nil, "budgets": []map[string]any{{"key": "one"}}})
		require.Equal(t, http.StatusCreated, status, "%s", body)
	}
	status, body := do(t, "POST", url+"/jobs", map[string]any{"type": "t", "queue": "work", "payload": nil, "budgets": []map[string]any{{"key": "frozen"}}})
	require.Equal(t, http.StatusCreated, status, "%s", body)
	status, body = do(t, "POST", url+"/jobs", map[string]any{"type": "t", "queue": "work", "payload": nil, "ready_at": time.Now().Add(time.Hour).UnixMilli()})
	require.Equal(t, http.StatusCreated, status, "%s", body)

	w := startWork(t, url, append([]string{"-q", "work", "--drain", "--concurrency", "3"}, timedScript(log, "0.3")...)...)
	require.Equal(t, cmd.ExitOK, w.wait(60*time.Second), "stderr: %s", w.err)
	ss := spans(t, log)
	require.Len(t, ss, 3, "the three jobs of the budget ran, one at a time")
	require.Equal(t, 1, maxOverlap(t, ss))
	require.Equal(t, 1, countJobs(t, url, "status=scheduled"))
	require.Equal(t, 1, countJobs(t, url, "status=ready&budgets.key=frozen"))

	// A tenant paused on its own holds its jobs as a paused budget does:
	// they cannot reach the worker, so they do not keep it draining.
	t.Run("TenantPausedForGood", func(t *testing.T) {
		putBudget(t, url, "tenants", map[string]any{"allocation": 10, "strategy": map[string]any{"type": "while_in_flight"},
			"per_key": map[string]any{"allocation": 1, "strategy": map[string]any{"type": "while_in_flight"}}})
		status, body := do(t, "POST", url+"/jobs", map[string]any{"type": "t", "queue": "tenants", "payload": nil, "budgets": []map[string]any{{"key": "tenants/acme"}}})
		require.Equal(t, http.StatusCreated, status, "%s", body)
		status, body = do(t, "PATCH", url+"/budgets/tenants%2Facme", map[string]any{"paused": true})
		require.Equal(t, http.StatusOK, status, "%s", body)
		w := startWork(t, url, "-q", "tenants", "--drain", "--", "true")
		require.Equal(t, cmd.ExitOK, w.wait(30*time.Second), "stderr: %s", w.err)
		require.Empty(t, w.out.String(), "the paused tenant's job did not run")
		require.Equal(t, 1, countJobs(t, url, "status=ready&budgets.key=tenants"))
	})

	t.Run("EmptyQueueExitsAtOnce", func(t *testing.T) {
		w := startWork(t, url, "-q", "empty", "--drain", "--", "true")
		require.Equal(t, cmd.ExitOK, w.wait(20*time.Second), "stderr: %s", w.err)
		require.Empty(t, w.out.String())
	})
}

// TestWork_MaxJobs: --max-jobs N starts N jobs and exits 0 once they
// finished; the others stay ready.
func TestWork_MaxJobs(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	dir := t.TempDir()
	enqueueBulk(t, url, "q", "t", 5)
	w := startWork(t, url, "-q", "q", "--max-jobs", "2", "--concurrency", "2", "--", "sh", "-c", `touch `+dir+`/$ZIZQ_JOB_ID`)
	require.Equal(t, cmd.ExitOK, w.wait(30*time.Second), "stderr: %s", w.err)
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, files, 2)
	require.Eventually(t, func() bool { return countJobs(t, url, "status=ready") == 3 }, 10*time.Second, 20*time.Millisecond)
}

// TestWork_ConcurrencyNeverAboveN: with --concurrency 3 the server never
// holds more than 3 of its jobs in flight and the commands' own timestamps
// never overlap more than 3 deep.
func TestWork_ConcurrencyNeverAboveN(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	log := filepath.Join(t.TempDir(), "log")
	enqueueBulk(t, url, "q", "t", 12)
	w := startWork(t, url, append([]string{"-q", "q", "--concurrency", "3", "--drain"}, timedScript(log, "0.3")...)...)
	most := 0
	for {
		select {
		case <-w.done:
		default:
			most = max(most, countJobs(t, url, "status=in_flight"))
			time.Sleep(20 * time.Millisecond)
			continue
		}
		break
	}
	require.Equal(t, cmd.ExitOK, w.wait(time.Second), "stderr: %s", w.err)
	require.LessOrEqual(t, most, 3)
	ss := spans(t, log)
	require.Len(t, ss, 12)
	require.LessOrEqual(t, maxOverlap(t, ss), 3)
}

// TestWork_BudgetCapsCommands: a while_in_flight budget of 5 under
// --concurrency 10: at most 5 commands run at any instant (the seed's
// first example), and more than one does.
func TestWork_BudgetCapsCommands(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	log := filepath.Join(t.TempDir(), "log")
	putBudget(t, url, "five", map[string]any{"allocation": 5, "strategy": map[string]any{"type": "while_in_flight"}})
	enqueueBound(t, url, "five", 15)
	w := startWork(t, url, append([]string{"-q", "work", "--concurrency", "10", "--drain"}, timedScript(log, "0.5")...)...)
	require.Equal(t, cmd.ExitOK, w.wait(60*time.Second), "stderr: %s", w.err)
	ss := spans(t, log)
	require.Len(t, ss, 15)
	most := maxOverlap(t, ss)
	require.LessOrEqual(t, most, 5)
	require.Greater(t, most, 1)
}

// TestWork_ServerRestart: the server is killed (SIGKILL) and started again
// on the same port while commands run: the worker says so, reconnects,
// and every job runs exactly once and succeeds.
func TestWork_ServerRestart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	port := freePort(t)
	log := filepath.Join(t.TempDir(), "ran")
	p := startServer(t, "--root-dir", root, "--port", port)
	ids := enqueueBulk(t, p.url, "q", "t", 30)
	w := startWork(t, p.url, "-q", "q", "--concurrency", "4", "--drain", "--", "sh", "-c",
		`echo "$ZIZQ_JOB_ID" >> `+log+`; sleep 0.4`)
	w.waitOut("exited with status 0", 6, 30*time.Second)
	p.kill()
	time.Sleep(time.Second) // commands finish while the server is away
	p = startServer(t, "--root-dir", root, "--port", port)
	code := w.wait(90 * time.Second)
	ran := readLines(t, log)
	sorted := slices.Clone(ran)
	slices.Sort(sorted)
	require.Equal(t, ids, slices.Compact(slices.Clone(sorted)), "none missing")
	require.Len(t, ran, len(ids), "none twice")
	require.Equal(t, cmd.ExitOK, code, "stderr: %s", w.err)
	require.Equal(t, 1, strings.Count(w.err.String(), "lost the take stream"), "said once: %s", w.err)
	require.Zero(t, countJobs(t, p.url, ""), "all completed")
}

// TestWork_BadInput: no "--" or no command is a usage error; an unknown
// queue is fine (the worker waits for jobs).
func TestWork_BadInput(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	for _, args := range [][]string{{"work"}, {"work", "--"}, {"work", "true"}, {"work", "x", "--", "true"}, {"work", "-o", "yaml", "--", "true"}} {
		r := runZizq(t, "", append([]string{"--url", url}, args...)...)
		require.Equal(t, cmd.ExitUsage, r.code, "%v: %s", args, r.err)
		require.Empty(t, r.out)
	}
	r := runZizq(t, "", "work", "--url", url)
	require.Contains(t, r.err, "Usage: zizq work [--queue Q]...")

	w := startWork(t, url, "-q", "not-yet", "--max-jobs", "1", "--", "true")
	time.Sleep(300 * time.Millisecond)
	select {
	case <-w.done:
		t.Fatalf("exited with an unknown queue: %s", w.err)
	default:
	}
	enqueueBulk(t, url, "not-yet", "t", 1)
	require.Equal(t, cmd.ExitOK, w.wait(20*time.Second), "stderr: %s", w.err)

	requireFails(t, runZizq(t, "", "work", "--url", url, "-q", "a*b", "--", "true"), cmd.ExitUsage, `invalid --queue "a*b": queue must not contain '*' (reserved)`)

	r = runZizq(t, "", "work", "--url", freeURL(t), "--", "true")
	require.Equal(t, cmd.ExitUnreachable, r.code, "%s", r.err)
}

// enqueueCosting enqueues a job of queue q, payload n, bound to the
// budget key at cost, and returns its ID.
func enqueueCosting(t *testing.T, url, q string, n int, key string, cost int64) string {
	t.Helper()
	status, body := do(t, "POST", url+"/jobs", map[string]any{"type": "t", "queue": q, "payload": n,
		"budgets": []map[string]any{{"key": key, "cost": cost}}})
	require.Equal(t, http.StatusCreated, status, "%s", body)
	var j api.Job
	require.NoError(t, json.Unmarshal(body, &j))
	return j.ID
}

func budgetStateOf(t *testing.T, url, key string) api.BudgetState {
	t.Helper()
	status, body := do(t, "GET", url+"/budgets/"+key+"?state=true", nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var b api.Budget
	require.NoError(t, json.Unmarshal(body, &b))
	require.NotNil(t, b.State, "%s", body)
	return *b.State
}

// TestWork_ResultFile: each run finds an empty file at $ZIZQ_RESULT,
// removed once it is over; a malformed one is ignored with a warning, on
// standard error and in the event, and the job is completed or failed all
// the same.
func TestWork_ResultFile(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	log := filepath.Join(t.TempDir(), "paths")
	ids := enqueueBulk(t, url, "q", "t", 3)
	// Payload 0 writes garbage and succeeds, 1 writes garbage and fails, 2
	// writes nothing.
	w := startWork(t, url, "-q", "q", "--drain", "-o", "json", "--", "sh", "-c", `[ -f "$ZIZQ_RESULT" ] && [ ! -s "$ZIZQ_RESULT" ] || exit 9
echo "$ZIZQ_RESULT" >> `+log+`
case "$(cat)" in
  0) echo 'tokens=1834' > "$ZIZQ_RESULT" ;;
  1) echo '{"budgets":[{"key":"tpm","cost":-1}]}' > "$ZIZQ_RESULT"; exit 3 ;;
esac`)
	require.Equal(t, cmd.ExitOK, w.wait(30*time.Second), "stderr: %s", w.err)
	_, status := getJob(t, url, ids[0])
	require.Equal(t, http.StatusNotFound, status, "completed, whatever its result file said")
	errs := jobErrors(t, url, ids[1])
	require.Len(t, errs, 1)
	require.Equal(t, "exit status 3", errs[0].Message, "failed, with its own message")
	_, status = getJob(t, url, ids[2])
	require.Equal(t, http.StatusNotFound, status)

	require.Contains(t, w.err.String(), "zizq: job "+ids[0]+`: result file ignored: it is not a JSON object {"budgets":[{"key":"…","cost":N}]}: invalid character 'o' in literal true (expecting 'r'); its success is sent without costs`)
	require.Contains(t, w.err.String(), "zizq: job "+ids[1]+": result file ignored: budgets[0]: tpm: cost must not be negative, got -1; its failure is sent without costs")
	warnings := map[string]string{}
	for _, e := range w.events() {
		if e.Event != "started" {
			warnings[e.ID] = e.Warning
			require.Nil(t, e.Budgets)
		}
	}
	require.Contains(t, warnings[ids[0]], "result file ignored: it is not a JSON object")
	require.Contains(t, warnings[ids[1]], "result file ignored: budgets[0]: tpm: cost must not be negative")
	require.Empty(t, warnings[ids[2]])

	paths := readLines(t, log)
	require.Len(t, paths, 3)
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(paths))), 3, "a file of its own for each run")
	for _, p := range paths {
		require.NoFileExists(t, p, "removed once the run is over")
		require.NoDirExists(t, filepath.Dir(p), "and the worker's directory once it exits")
	}
}

// TestWork_ResultFileSettles needs the server of issue 25: a job bound at
// cost 100 (its estimate) to a budget of 100 an hour writes its real cost
// 20 to $ZIZQ_RESULT and exits 0: the 80 it did not spend are back. A
// failing one that cost 150 puts its budget 50 in debt.
func TestWork_ResultFileSettles(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	hourly := map[string]any{"allocation": 100, "strategy": map[string]any{"type": "time_based", "duration_ms": 3_600_000}}
	putBudget(t, url, "tpm", hourly)
	putBudget(t, url, "over", hourly)
	ok := enqueueCosting(t, url, "llm", 0, "tpm", 100)
	over := enqueueCosting(t, url, "llm", 1, "over", 100)
	w := startWork(t, url, "-q", "llm", "--drain", "-o", "json", "--", "sh", "-c", `case "$(cat)" in
  0) echo '{"budgets":[{"key":"tpm","cost":20}],"pause":{"for_ms":1000}}' > "$ZIZQ_RESULT" ;;
  1) echo '{"budgets":[{"key":"over","cost":150}]}' > "$ZIZQ_RESULT"; exit 1 ;;
esac`)
	require.Equal(t, cmd.ExitOK, w.wait(30*time.Second), "stderr: %s", w.err)
	budgets := map[string][]api.Settle{}
	for _, e := range w.events() {
		if e.Event != "started" {
			budgets[e.ID] = e.Budgets
			require.Empty(t, e.Warning)
		}
	}
	cost := func(n int64) *int64 { return &n }
	require.Equal(t, map[string][]api.Settle{ok: {{Key: "tpm", Cost: cost(20)}}, over: {{Key: "over", Cost: cost(150)}}}, budgets)
	require.NotContains(t, w.err.String(), "refused", "the server took the costs")

	st := budgetStateOf(t, url, "tpm")
	require.InDelta(t, 80, st.Available, 1, "100 bound at dispatch, 20 spent")
	require.Equal(t, &api.Settled{Count: 1, Credited: 80}, st.Settled)
	st = budgetStateOf(t, url, "over")
	require.InDelta(t, -50, st.Available, 1, "100 bound at dispatch, 150 spent")
	require.NotNil(t, st.Debt)
	require.InDelta(t, 50, *st.Debt, 1)
	require.Equal(t, &api.Settled{Count: 1, Debited: 50}, st.Settled)
}

// TestWork_Throttle needs the server of issue 26: a command that writes a
// throttle to $ZIZQ_RESULT and exits 75 fails its job with it, beside its
// costs: the adaptive budget halves its rate and pays nothing for the
// retry-after, and the job's retry does not count. A throttle with exit
// status 0 is ignored with a warning, in the event and on standard error.
func TestWork_Throttle(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	putBudget(t, url, "api", map[string]any{"allocation": 100, "strategy": map[string]any{"type": "time_based", "duration_ms": 1000},
		"adaptive": map[string]any{}})
	refused := enqueueCosting(t, url, "llm", 0, "api", 10)
	fine := enqueueCosting(t, url, "llm", 1, "api", 10)
	// Both run at once: the throttle stops the budget for 45 s.
	w := startWork(t, url, "-q", "llm", "--concurrency", "2", "--drain", "-o", "json", "--", "sh", "-c", `case "$(cat)" in
  0) echo '{"budgets":[{"key":"api","cost":4}],"throttle":{"budget":"api","retry_after_ms":45000}}' > "$ZIZQ_RESULT"; exit 75 ;;
  1) echo '{"throttle":{"budget":"api"}}' > "$ZIZQ_RESULT" ;;
esac`)
	require.Equal(t, cmd.ExitOK, w.wait(30*time.Second), "stderr: %s", w.err)
	byID := map[string]workEvent{}
	for _, e := range w.events() {
		if e.Event != "started" {
			byID[e.ID] = e
		}
	}
	require.Equal(t, "failed", byID[refused].Event)
	require.Equal(t, 75, *byID[refused].Status)
	require.Equal(t, &api.Throttle{Budget: api.Ptr("api"), RetryAfterMs: api.Ptr[int64](45000)}, byID[refused].Throttle)
	require.Equal(t, []api.Settle{{Key: "api", Cost: api.Ptr[int64](4)}}, byID[refused].Budgets)
	require.Empty(t, byID[refused].Warning)
	require.Equal(t, "succeeded", byID[fine].Event)
	require.Nil(t, byID[fine].Throttle)
	require.Equal(t, "result file's throttle ignored: the command ended with exit status 0, and only exit status 75 (EX_TEMPFAIL) reports a refusal", byID[fine].Warning)
	require.Contains(t, w.err.String(), "zizq: job "+fine+": result file's throttle ignored")
	require.NotContains(t, w.err.String(), "refused the throttle")

	st := budgetStateOf(t, url, "api")
	require.Equal(t, int64(1), *st.Throttles)
	require.InDelta(t, 50, *st.EffectiveAllocation, 0.5)
	require.NotNil(t, st.ThrottledUntil)
	require.InDelta(t, time.Now().Add(45*time.Second).UnixMilli(), *st.ThrottledUntil, 5000)
	require.Equal(t, &api.Settled{Count: 1, Credited: 6}, st.Settled, "the costs went with the throttle")
	j, _ := getJob(t, url, refused)
	require.Equal(t, api.StatusScheduled, j.Status, "retried")
}

// freePort is a port nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	require.NoError(t, l.Close())
	return port
}
