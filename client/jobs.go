package client

import (
	"context"
	"iter"
	"net/http"
	"strconv"

	"github.com/zizq/zizq/api"
)

// Enqueue adds one job (POST /jobs) and returns it as the server echoes it
// (without payload).
func (c *Client) Enqueue(ctx context.Context, req api.EnqueueRequest) (*api.Job, error) {
	var out api.Job
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/jobs", body: req}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// EnqueueBulk adds jobs all-or-nothing (POST /jobs/bulk) and returns them
// in request order.
func (c *Client) EnqueueBulk(ctx context.Context, reqs []api.EnqueueRequest) ([]api.Job, error) {
	if reqs == nil {
		reqs = []api.EnqueueRequest{}
	}
	var out api.BulkJobs
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/jobs/bulk", body: api.BulkEnqueueRequest{Jobs: reqs}}, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// GetJob returns a job with its payload (GET /jobs/{id}).
func (c *Client) GetJob(ctx context.Context, id string) (*api.Job, error) {
	var out api.Job
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/jobs/" + seg(id)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListJobs returns one page of jobs (GET /jobs). q holds the filters and
// the paging (Order, Limit, From); zero values are left to the server.
// q.Parked lists only the jobs parked now (?parked=true, our extension);
// the page links keep that filter.
func (c *Client) ListJobs(ctx context.Context, q api.JobQuery) (*api.JobList, error) {
	var out api.JobList
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/jobs", query: q.Values(true)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NextJobs follows a page link of a listing (JobList.Pages.Next or Prev).
func (c *Client) NextJobs(ctx context.Context, link string) (*api.JobList, error) {
	q, err := api.ParseJobsLink(link)
	if err != nil {
		return nil, err
	}
	return c.ListJobs(ctx, q)
}

// AllJobs lists every job q selects, following the pages; q.Limit is the
// page size. It stops at the first error, which it yields.
func (c *Client) AllJobs(ctx context.Context, q api.JobQuery) iter.Seq2[api.Job, error] {
	return follow(func(link string) ([]api.Job, *string, error) {
		var page *api.JobList
		var err error
		if link == "" {
			page, err = c.ListJobs(ctx, q)
		} else {
			page, err = c.NextJobs(ctx, link)
		}
		if err != nil {
			return nil, nil, err
		}
		return page.Jobs, page.Pages.Next, nil
	})
}

// CountJobs counts the jobs q's filters select (GET /jobs/count); paging
// fields are ignored. q.Parked counts only the jobs parked now
// (?parked=true, our extension), as GET /stats's jobs.parked does.
func (c *Client) CountJobs(ctx context.Context, q api.JobQuery) (int64, error) {
	var out api.Count
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/jobs/count", query: q.Values(false)}, &out); err != nil {
		return 0, err
	}
	return out.Count, nil
}

// DeleteJob deletes one job (DELETE /jobs/{id}).
func (c *Client) DeleteJob(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/jobs/" + seg(id)}, nil)
	return err
}

// DeleteJobs deletes every job q's filters select (DELETE /jobs) and
// returns how many. An empty filter deletes every job.
func (c *Client) DeleteJobs(ctx context.Context, q api.JobQuery) (int64, error) {
	var out api.Deleted
	if _, err := c.do(ctx, call{method: http.MethodDelete, path: "/jobs", query: q.Values(false)}, &out); err != nil {
		return 0, err
	}
	return out.Deleted, nil
}

// PatchJob changes a live job (PATCH /jobs/{id}) and returns it (without
// payload).
func (c *Client) PatchJob(ctx context.Context, id string, p api.JobPatch) (*api.Job, error) {
	var out api.Job
	if _, err := c.do(ctx, call{method: http.MethodPatch, path: "/jobs/" + seg(id), body: p}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchJobs changes every live job q's filters select (PATCH /jobs) and
// returns how many changed.
func (c *Client) PatchJobs(ctx context.Context, q api.JobQuery, p api.JobPatch) (int64, error) {
	var out api.Patched
	if _, err := c.do(ctx, call{method: http.MethodPatch, path: "/jobs", query: q.Values(false), body: p}, &out); err != nil {
		return 0, err
	}
	return out.Patched, nil
}

// ListErrors returns a page of a job's error records (GET /jobs/{id}/errors).
// Zero fields of q are left to the server (ascending, 50 a page, from the
// first).
func (c *Client) ListErrors(ctx context.Context, id string, q api.ErrorsQuery) (*api.ErrorList, error) {
	var out api.ErrorList
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/jobs/" + seg(id) + "/errors", query: q.Values()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NextErrors follows a page link of a job's error records
// (ErrorList.Pages.Next or Prev).
func (c *Client) NextErrors(ctx context.Context, link string) (*api.ErrorList, error) {
	id, q, err := api.ParseErrorsLink(link)
	if err != nil {
		return nil, err
	}
	return c.ListErrors(ctx, id, q)
}

// AllErrors lists every error record of a job from q on, following the
// pages; q.Limit is the page size. It stops at the first error, which it
// yields.
func (c *Client) AllErrors(ctx context.Context, id string, q api.ErrorsQuery) iter.Seq2[api.ErrorRecord, error] {
	return follow(func(link string) ([]api.ErrorRecord, *string, error) {
		var page *api.ErrorList
		var err error
		if link == "" {
			page, err = c.ListErrors(ctx, id, q)
		} else {
			page, err = c.NextErrors(ctx, link)
		}
		if err != nil {
			return nil, nil, err
		}
		return page.Errors, page.Pages.Next, nil
	})
}

// follow yields the items of a listing page after page: fetch("") reads the
// first page and fetch(link) the page a next link names. It ends after a
// page without a next link (or without items), and at the first error,
// which it yields.
func follow[T any](fetch func(link string) (items []T, next *string, err error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		link := ""
		for {
			items, next, err := fetch(link)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == nil || len(items) == 0 {
				return
			}
			link = *next
		}
	}
}

// GetError returns one error record of a job (GET /jobs/{id}/errors/{n}).
func (c *Client) GetError(ctx context.Context, id string, attempt uint32) (*api.ErrorRecord, error) {
	var out api.ErrorRecord
	path := "/jobs/" + seg(id) + "/errors/" + strconv.FormatUint(uint64(attempt), 10)
	if _, err := c.do(ctx, call{method: http.MethodGet, path: path}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Why explains what a job waits for (GET /jobs/{id}/why).
func (c *Client) Why(ctx context.Context, id string) (*api.Why, error) {
	var out api.Why
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/jobs/" + seg(id) + "/why"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
