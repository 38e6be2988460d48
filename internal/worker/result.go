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
// budget's estimate against them). Unknown members are ignored, so that
// later versions can add some. A file the worker cannot read as such is
// ignored with a warning: the job's outcome never depends on it.

// EnvResult names the variable that holds the result file's path.
const EnvResult = "ZIZQ_RESULT"

// maxResult bounds what is read of a result file.
const maxResult = 1 << 20

// result is what a run's result file said.
type result struct {
	settles []api.Settle
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
	settles, err := parseResult(b)
	if err != nil {
		return result{warning: err.Error()}
	}
	return result{settles: settles}
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

// parseResult reads the costs of a result file: none when it is empty,
// all or none otherwise. Members other than "budgets", and of each cost
// other than "key" and "cost", are ignored.
func parseResult(b []byte) ([]api.Settle, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil || top == nil {
		return nil, fmt.Errorf(`it is not a JSON object {"budgets":[{"key":"…","cost":N}]}%s`, jsonWhy(err))
	}
	var items []json.RawMessage
	if raw, ok := top["budgets"]; ok && string(raw) != "null" {
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
