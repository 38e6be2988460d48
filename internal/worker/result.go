package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/zizq/zizq/api"
)

// The result file: before each run the worker creates an empty file and
// passes its path in $ZIZQ_RESULT. A command that knows what its job
// really cost writes {"budgets":[{"key":"…","cost":N}]} there, and the
// costs go with the job's success or failure (the server settles each
// budget's estimate against them). A command the upstream refused (an
// HTTP 429) writes {"throttle":{"budget":"…","retry_after_ms":N}} and
// exits with status 75 (EX_TEMPFAIL): its failure carries the throttle,
// and the budget backs off. Unknown members are ignored, so that later
// versions can add some. A file the worker cannot read as such is ignored
// with a warning: the job's outcome never depends on it.

// EnvResult names the variable that holds the result file's path.
const EnvResult = "ZIZQ_RESULT"

// maxResult bounds what is read of a result file.
const maxResult = 1 << 20

// ExitTempFail is EX_TEMPFAIL (sysexits.h), the exit status of a command
// that says "try again later": with a throttle in its result file, the
// upstream refused.
const ExitTempFail = 75

// result is what a run's result file said.
type result struct {
	settles  []api.Settle
	throttle *api.Throttle
	// warning says why the file was ignored; "" when it was not.
	warning string
}

// resultFiles makes the result files of one worker in a directory of its
// own, removed at the end. With no directory (it could not be made) every
// command gets the null device: what it writes there is lost.
type resultFiles struct{ dir string }

func newResultFiles(parent string) (*resultFiles, error) {
	dir, err := os.MkdirTemp(parent, "zizq-work-")
	if err != nil {
		return &resultFiles{}, fmt.Errorf("create the directory of result files: %w", err)
	}
	return &resultFiles{dir: dir}, nil
}

// create makes the empty result file of one run of the job.
func (r *resultFiles) create(jobID string) (string, error) {
	if r.dir == "" {
		return os.DevNull, nil
	}
	f, err := os.CreateTemp(r.dir, jobID+"-*.json")
	if err != nil {
		return os.DevNull, fmt.Errorf("create its result file: %w", err)
	}
	return f.Name(), f.Close()
}

// take reads a run's result file and removes it.
func (r *resultFiles) take(path string) result {
	if path == "" || path == os.DevNull {
		return result{}
	}
	defer os.Remove(path)
	b, err := readResultFile(path)
	if err != nil {
		return result{warning: err.Error()}
	}
	res, err := parseResult(b)
	if err != nil {
		return result{warning: err.Error()}
	}
	return res
}

// discard removes a result file no one will read (the run was abandoned).
func (r *resultFiles) discard(path string) {
	if path != "" && path != os.DevNull {
		_ = os.Remove(path)
	}
}

// close removes the directory and whatever is left in it.
func (r *resultFiles) close() {
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
}

// readResultFile reads at most maxResult bytes; a file the command removed
// is an empty one.
func readResultFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read it: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxResult+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("cannot read it: %w", err)
	case len(b) > maxResult:
		return nil, fmt.Errorf("it is larger than %d bytes", maxResult)
	}
	return b, nil
}

// parseResult reads the costs and the throttle of a result file: none
// when it is empty, all or none otherwise. Members other than "budgets"
// and "throttle", and of each cost other than "key" and "cost", are
// ignored.
func parseResult(b []byte) (result, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return result{}, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil || top == nil {
		return result{}, fmt.Errorf(`it is not a JSON object {"budgets":[{"key":"…","cost":N}]}%s`, jsonWhy(err))
	}
	settles, err := parseSettles(top["budgets"])
	if err != nil {
		return result{}, err
	}
	throttle, err := parseThrottle(top["throttle"])
	if err != nil {
		return result{}, err
	}
	return result{settles: settles, throttle: throttle}, nil
}

// parseSettles reads the "budgets" member: nil when absent or null.
func parseSettles(raw json.RawMessage) ([]api.Settle, error) {
	var items []json.RawMessage
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, errors.New("budgets must be an array")
		}
	}
	var settles []api.Settle
	for i, raw := range items {
		s, err := parseSettle(raw)
		if err != nil {
			return nil, fmt.Errorf("budgets[%d]: %w", i, err)
		}
		settles = append(settles, s)
	}
	return settles, nil
}

// parseThrottle reads the "throttle" member: nil when absent or null.
// Its bounds (retry_after_ms at most a day) are the server's to check.
func parseThrottle(raw json.RawMessage) (*api.Throttle, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errors.New(`throttle must be an object {"budget":"…","retry_after_ms":N}`)
	}
	var key string
	if err := json.Unmarshal(m["budget"], &key); err != nil || key == "" {
		return nil, errors.New("throttle.budget must be a budget key (a non-empty string): the budget whose upstream refused")
	}
	t := &api.Throttle{Budget: &key}
	if ms := m["retry_after_ms"]; len(ms) > 0 && string(ms) != "null" {
		n, err := strconv.ParseInt(string(ms), 10, 64)
		switch {
		case err != nil:
			return nil, fmt.Errorf("throttle.retry_after_ms must be a whole number of milliseconds, got %s", ms)
		case n < 0:
			return nil, fmt.Errorf("throttle.retry_after_ms must not be negative, got %d", n)
		}
		t.RetryAfterMs = &n
	}
	if c := m["count"]; len(c) > 0 && string(c) != "null" {
		var count bool
		if err := json.Unmarshal(c, &count); err != nil {
			return nil, fmt.Errorf("throttle.count must be true or false, got %s", c)
		}
		t.Count = &count
	}
	return t, nil
}

// jsonWhy is ": " and the decoder's words for a syntax error, "" for
// valid JSON of another shape.
func jsonWhy(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return ": " + err.Error()
	}
	return ""
}

func parseSettle(raw json.RawMessage) (api.Settle, error) {
	var item map[string]json.RawMessage
	if err := json.Unmarshal(raw, &item); err != nil || item == nil {
		return api.Settle{}, errors.New(`want an object {"key":"…","cost":N}`)
	}
	var key string
	if err := json.Unmarshal(item["key"], &key); err != nil || key == "" {
		return api.Settle{}, errors.New("key must be a budget key (a non-empty string)")
	}
	cost, err := parseCost(item["cost"])
	if err != nil {
		return api.Settle{}, fmt.Errorf("%s: %w", key, err)
	}
	return api.Settle{Key: key, Cost: &cost}, nil
}

func parseCost(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errors.New("cost is missing")
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("cost must be a whole number of tokens, got %s", raw)
	case n < 0:
		return 0, fmt.Errorf("cost must not be negative, got %d", n)
	}
	return n, nil
}
