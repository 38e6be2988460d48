package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/internal/buildinfo"
)

// The bench's producers share the machine with the server they load, so
// what a producer spends on a job is taken from the server. Through the
// typed client a bulk of 1,000 cost its producer about 3 us a job to
// decode the 1,000 jobs of the answer, which the bench throws away (the
// request's encoding has a fast path of its own in api.Marshal). postBulk
// checks the answer by counting its jobs, so that the enqueue figures
// measure the server rather than the load generator. The server's work is
// the same either way.

// postBulk enqueues reqs with one POST /jobs/bulk and checks that the
// answer holds one job for each.
func (t *target) postBulk(ctx context.Context, hc *http.Client, timeout time.Duration, reqs []api.EnqueueRequest) error {
	body, err := api.Marshal(api.JSON, api.BulkEnqueueRequest{Jobs: reqs})
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url+"/jobs/bulk", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "zizq-bench/"+buildinfo.Version)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return answerFailure(resp.StatusCode, answer)
	}
	if n := countAnswerJobs(answer); n != len(reqs) {
		return fmt.Errorf("the answer holds %d jobs, want %d", n, len(reqs))
	}
	return nil
}

// answerFailure is the error of a bulk answered with an error status.
func answerFailure(status int, answer []byte) error {
	var e api.Error
	if api.Unmarshal(api.JSON, answer, &e) == nil && e.Error != "" {
		return fmt.Errorf("%d %s: %s", status, http.StatusText(status), e.Error)
	}
	return fmt.Errorf("%d %s: %.200s", status, http.StatusText(status), answer)
}

// countAnswerJobs counts the jobs of a bulk's answer. zizq writes each
// job's id first, so counting `{"id":` is exact for it and cheap; an
// answer written otherwise (another server) is decoded whole.
func countAnswerJobs(answer []byte) int {
	if n := bytes.Count(answer, []byte(`{"id":`)); n > 0 {
		return n
	}
	var out api.BulkJobs
	if api.Unmarshal(api.JSON, answer, &out) != nil {
		return -1
	}
	return len(out.Jobs)
}
