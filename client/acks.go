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
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/jobs/" + seg(id) + "/success"}, nil)
	return err
}

// AckBulk completes in-flight jobs (POST /jobs/success). Every ID that is
// in flight is completed; the others come back in notFound, with a nil
// error, since the call did its work.
func (c *Client) AckBulk(ctx context.Context, ids []string) (notFound []string, err error) {
	if ids == nil {
		ids = []string{}
	}
	_, err = c.do(ctx, call{method: http.MethodPost, path: "/jobs/success", body: api.AckIDs{IDs: ids}}, nil)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusUnprocessableEntity && e.NotFound != nil {
		return e.NotFound, nil
	}
	return nil, err
}

// Fail records a failure of an in-flight job (POST /jobs/{id}/failure) and
// returns the job as it now is (without payload): scheduled for a retry,
// or dead.
func (c *Client) Fail(ctx context.Context, id string, req api.FailureRequest) (*api.Job, error) {
	var out api.Job
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/jobs/" + seg(id) + "/failure", body: req}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
