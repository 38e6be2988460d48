package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/internal/buildinfo"
)

// The bench's producers share the machine with the server they load, so
// what a producer spends on a job is taken from the server. Through the
// typed client a bulk of 1,000 costs its producer about 5 us a job: 2 us
// to encode the request reflectively and 3 us to decode the 1,000 jobs
// of the answer, which the bench throws away. postBulk writes the request
// with an appender and checks the answer by counting its jobs, about
// 0.3 us a job, so that the enqueue figures measure the server rather
// than the load generator. The server's work is the same either way.

// bulkBodies recycles request bodies: a bulk of 1,000 is about 170 KB.
var bulkBodies = sync.Pool{New: func() any { return new([]byte) }}

// postBulk enqueues reqs with one POST /jobs/bulk and checks that the
// answer holds one job for each.
func (t *target) postBulk(ctx context.Context, hc *http.Client, timeout time.Duration, reqs []api.EnqueueRequest) error {
	buf := bulkBodies.Get().(*[]byte)
	defer bulkBodies.Put(buf)
	body, err := appendBulkJSON((*buf)[:0], reqs)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	*buf = body
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

// appendBulkJSON appends the body of POST /jobs/bulk for reqs. The fields
// the bench sets (type, queue, payload, priority, budgets of a key and a
// cost) are appended by hand; a request with any other field set is
// encoded by api.Marshal, so the body is always the request given.
func appendBulkJSON(dst []byte, reqs []api.EnqueueRequest) ([]byte, error) {
	dst = append(dst, `{"jobs":[`...)
	for i := range reqs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendEnqueueJSON(dst, &reqs[i]); err != nil {
			return nil, err
		}
	}
	return append(dst, "]}"...), nil
}

func appendEnqueueJSON(dst []byte, r *api.EnqueueRequest) ([]byte, error) {
	if !appendable(r) {
		b, err := api.Marshal(api.JSON, r)
		return append(dst, b...), err
	}
	dst = append(dst, '{')
	var err error
	field := func(name string) {
		if dst[len(dst)-1] != '{' {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `":`...)
	}
	if r.Type != nil {
		field("type")
		if dst, err = jsontext.AppendQuote(dst, *r.Type); err != nil {
			return nil, err
		}
	}
	if r.Queue != nil {
		field("queue")
		if dst, err = jsontext.AppendQuote(dst, *r.Queue); err != nil {
			return nil, err
		}
	}
	if len(r.Payload) > 0 {
		field("payload")
		dst = append(dst, r.Payload...)
	}
	if r.Priority != nil {
		field("priority")
		dst = strconv.AppendUint(dst, uint64(*r.Priority), 10)
	}
	if len(r.Budgets) > 0 {
		field("budgets")
		dst = append(dst, '[')
		for i, bind := range r.Budgets {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			if dst, err = jsontext.AppendQuote(dst, *bind.Key); err != nil {
				return nil, err
			}
			dst = append(dst, `,"cost":`...)
			dst = strconv.AppendInt(dst, *bind.Cost, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// appendable reports whether appendEnqueueJSON writes r by hand: no field
// but those it knows, budgets with both key and cost, and a payload that
// is one valid JSON value (the server's to judge otherwise).
func appendable(r *api.EnqueueRequest) bool {
	if r.ReadyAt != nil || r.RetryLimit != nil || r.Backoff != nil || r.Retention != nil || r.UniqueKey != nil ||
		r.UniqueWhile != nil || r.Batch != nil || r.StartBy != nil || r.StartWithinMs != nil {
		return false
	}
	for _, b := range r.Budgets {
		if b.Key == nil || b.Cost == nil || b.CreateWith != nil {
			return false
		}
	}
	return len(r.Payload) == 0 || jsontext.Value(r.Payload).IsValid()
}
