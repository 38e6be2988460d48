package client

import (
	"context"
	"net/http"

	"github.com/zizq/zizq/api"
)

// Binding management (docs/API.md §Binding management). The single-job calls
// answer the job (without payload); the filter calls change every scheduled or
// ready job the filters select and report the in-flight ones they left alone.

// BindJob binds a job to a budget (POST /jobs/{id}/budgets/{key}); a job
// bound to it already is a 409 *Error. req.Key is ignored: the key travels
// in the path.
func (c *Client) BindJob(ctx context.Context, id, key string, req api.BindingRequest) (*api.Job, error) {
	return c.bindOne(ctx, http.MethodPost, "/jobs/"+seg(id)+"/budgets/"+seg(key), bindingBody(req))
}

// PutJobBinding binds a job to a budget or replaces that binding
// (PUT /jobs/{id}/budgets/{key}); a missing cost means 1.
func (c *Client) PutJobBinding(ctx context.Context, id, key string, req api.BindingRequest) (*api.Job, error) {
	return c.bindOne(ctx, http.MethodPut, "/jobs/"+seg(id)+"/budgets/"+seg(key), bindingBody(req))
}

// PatchJobBinding changes the cost of a job's binding
// (PATCH /jobs/{id}/budgets/{key}).
func (c *Client) PatchJobBinding(ctx context.Context, id, key string, cost int64) (*api.Job, error) {
	return c.bindOne(ctx, http.MethodPatch, "/jobs/"+seg(id)+"/budgets/"+seg(key), api.BindingRequest{Cost: &cost})
}

// UnbindJob removes a job's binding to a budget
// (DELETE /jobs/{id}/budgets/{key}).
func (c *Client) UnbindJob(ctx context.Context, id, key string) (*api.Job, error) {
	return c.bindOne(ctx, http.MethodDelete, "/jobs/"+seg(id)+"/budgets/"+seg(key), nil)
}

// UnbindJobAll removes every binding of a job (DELETE /jobs/{id}/budgets).
func (c *Client) UnbindJobAll(ctx context.Context, id string) (*api.Job, error) {
	return c.bindOne(ctx, http.MethodDelete, "/jobs/"+seg(id)+"/budgets", nil)
}

// ReplaceJobBindings replaces the whole list of a job's bindings
// (PUT /jobs/{id}/budgets); an empty list unbinds it.
func (c *Client) ReplaceJobBindings(ctx context.Context, id string, bindings []api.BindingRequest) (*api.Job, error) {
	if bindings == nil {
		bindings = []api.BindingRequest{}
	}
	return c.bindOne(ctx, http.MethodPut, "/jobs/"+seg(id)+"/budgets", api.BindingsReplace{Budgets: bindings})
}

func (c *Client) bindOne(ctx context.Context, method, path string, body any) (*api.Job, error) {
	var out api.Job
	if _, err := c.do(ctx, call{method: method, path: path, body: body}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// BindJobs binds the jobs q selects to a budget, leaving those bound to it
// already (POST /jobs/budgets/{key}).
func (c *Client) BindJobs(ctx context.Context, q api.JobQuery, key string, req api.BindingRequest) (*api.BindingChange, error) {
	return c.bindMany(ctx, http.MethodPost, "/jobs/budgets/"+seg(key), q, bindingBody(req))
}

// PutJobsBinding binds the jobs q selects to a budget or replaces that
// binding (PUT /jobs/budgets/{key}).
func (c *Client) PutJobsBinding(ctx context.Context, q api.JobQuery, key string, req api.BindingRequest) (*api.BindingChange, error) {
	return c.bindMany(ctx, http.MethodPut, "/jobs/budgets/"+seg(key), q, bindingBody(req))
}

// PatchJobsBinding changes the cost of the bindings to a budget of the jobs
// q selects (PATCH /jobs/budgets/{key}).
func (c *Client) PatchJobsBinding(ctx context.Context, q api.JobQuery, key string, cost int64) (*api.BindingChange, error) {
	return c.bindMany(ctx, http.MethodPatch, "/jobs/budgets/"+seg(key), q, api.BindingRequest{Cost: &cost})
}

// UnbindJobs removes the binding to a budget of the jobs q selects
// (DELETE /jobs/budgets/{key}).
func (c *Client) UnbindJobs(ctx context.Context, q api.JobQuery, key string) (*api.BindingChange, error) {
	return c.bindMany(ctx, http.MethodDelete, "/jobs/budgets/"+seg(key), q, nil)
}

// UnbindJobsAll removes every binding of the jobs q selects
// (DELETE /jobs/budgets).
func (c *Client) UnbindJobsAll(ctx context.Context, q api.JobQuery) (*api.BindingChange, error) {
	return c.bindMany(ctx, http.MethodDelete, "/jobs/budgets", q, nil)
}

func (c *Client) bindMany(ctx context.Context, method, path string, q api.JobQuery, body any) (*api.BindingChange, error) {
	var out api.BindingChange
	if _, err := c.do(ctx, call{method: method, path: path, query: q.Values(false), body: body}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// bindingBody drops the key, which travels in the path.
func bindingBody(req api.BindingRequest) api.BindingRequest {
	req.Key = nil
	return req
}
