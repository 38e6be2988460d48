package client_test

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// callUpstream stands for the call a job makes to a rate-limited upstream.
var callUpstream func(ctx context.Context, job api.Job) (*http.Response, error)

// The README's "Tenants" section shows handle as it is here (checked by
// cmd's TestREADME_Tenants): a worker that pauses the upstream's budget
// until its Retry-After.
func handle(ctx context.Context, zc *client.Client, job api.Job) error {
	resp, err := callUpstream(ctx, job)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		return zc.Ack(ctx, job.ID)
	}
	secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	until := time.Now().Add(time.Duration(max(secs, 1)) * time.Second)
	if _, err := zc.PauseBudget(ctx, "upstream", until); err != nil {
		return err
	}
	retryAt := uint64(until.UnixMilli())
	_, err = zc.Fail(ctx, job.ID, api.FailureRequest{Message: api.Ptr("429 from upstream"), RetryAt: &retryAt})
	return err
}

// Example_pauseUntilRetryAfter: a worker's handler pauses the whole
// budget when the upstream answers 429.
func Example_pauseUntilRetryAfter() {
	_ = handle
}
