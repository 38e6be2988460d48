package client

import (
	"context"
	"errors"
	"net/http"

	"github.com/zizq/zizq/api"
)

// Ack completes an in-flight job (POST /jobs/{id}/success). A job that is
// not in flight is a 404 *Error.
func (c *Client) Ack(ctx context.Context, id string) error {
	return c.AckWith(ctx, id, nil)
}

// AckWith completes an in-flight job and settles what it really cost its
// time_based and calendar budgets (our extension): the cost bound at
// dispatch was the estimate, and the server credits back or debits the
// difference. No settles sends no body, as Ack does: every estimate was
// right.
func (c *Client) AckWith(ctx context.Context, id string, settles []api.Settle) error {
	req := call{method: http.MethodPost, path: "/jobs/" + seg(id) + "/success"}
	if len(settles) > 0 {
		req.body = api.SuccessRequest{Budgets: settles}
	}
	_, err := c.do(ctx, req, nil)
	return err
}

// AckBulk completes in-flight jobs (POST /jobs/success). Every ID that is
// in flight is completed; the others come back in notFound, with a nil
// error, since the call did its work.
func (c *Client) AckBulk(ctx context.Context, ids []string) (notFound []string, err error) {
	return c.AckBulkWith(ctx, ids, nil)
}

// AckBulkWith is AckBulk that also settles the real costs of some of the
// jobs, by job ID (see AckWith); jobs without settles keep their
// estimates.
func (c *Client) AckBulkWith(ctx context.Context, ids []string, settles map[string][]api.Settle) (notFound []string, err error) {
	if ids == nil {
		ids = []string{}
	}
	body := api.AckIDs{IDs: ids}
	if len(settles) > 0 {
		body.Budgets = settles
	}
	_, err = c.do(ctx, call{method: http.MethodPost, path: "/jobs/success", body: body}, nil)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusUnprocessableEntity && e.NotFound != nil {
		return e.NotFound, nil
	}
	return nil, err
}

// Fail records a failure of an in-flight job (POST /jobs/{id}/failure) and
// returns the job as it now is (without payload): scheduled for a retry,
// or dead. req.Budgets settles the failed run's real costs, as AckWith
// does for a success; req.Throttle reports that the upstream of one of
// the job's budgets refused (issue 26): the budget backs off, and the
// retry does not count toward the job's retry limit unless Count says so.
func (c *Client) Fail(ctx context.Context, id string, req api.FailureRequest) (*api.Job, error) {
	var out api.Job
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/jobs/" + seg(id) + "/failure", body: req}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Settle is the real cost of a job to one of its budgets, for AckWith,
// AckBulkWith and api.FailureRequest.Budgets.
func Settle(key string, cost int64) api.Settle {
	return api.Settle{Key: key, Cost: &cost}
}
