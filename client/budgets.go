package client

import (
	"context"
	"net/http"
	"time"

	"github.com/zizq/zizq/api"
)

// ListBudgets returns every budget, sorted by key (GET /budgets); state
// adds the live figures (?state=true).
func (c *Client) ListBudgets(ctx context.Context, state bool) ([]api.Budget, error) {
	var out api.BudgetList
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/budgets", query: api.StateValues(state)}, &out); err != nil {
		return nil, err
	}
	return out.Budgets, nil
}

// GetBudget returns one budget (GET /budgets/{key}); state adds the live
// figures.
func (c *Client) GetBudget(ctx context.Context, key string, state bool) (*api.Budget, error) {
	var out api.Budget
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/budgets/" + seg(key), query: api.StateValues(state)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateBudget creates a budget (POST /budgets/{key}); a key that exists
// already is a 409 *Error.
func (c *Client) CreateBudget(ctx context.Context, key string, in api.BudgetInput) (*api.Budget, error) {
	return c.writeBudget(ctx, http.MethodPost, key, in)
}

// PutBudget creates or replaces a budget (PUT /budgets/{key}).
func (c *Client) PutBudget(ctx context.Context, key string, in api.BudgetInput) (*api.Budget, error) {
	return c.writeBudget(ctx, http.MethodPut, key, in)
}

func (c *Client) writeBudget(ctx context.Context, method, key string, in api.BudgetInput) (*api.Budget, error) {
	var out api.Budget
	if _, err := c.do(ctx, call{method: method, path: "/budgets/" + seg(key), body: in}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchBudget changes a budget (PATCH /budgets/{key}); it never creates one.
func (c *Client) PatchBudget(ctx context.Context, key string, p api.BudgetPatch) (*api.Budget, error) {
	var out api.Budget
	if _, err := c.do(ctx, call{method: http.MethodPatch, path: "/budgets/" + seg(key), body: p}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteBudget deletes a budget (DELETE /budgets/{key}); one that
// unfinished jobs are bound to is a 409 *Error.
func (c *Client) DeleteBudget(ctx context.Context, key string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/budgets/" + seg(key)}, nil)
	return err
}

// SubBudgets returns the live sub-budgets of the family parent, sorted by
// key (GET /budgets?parent=, our extension); state adds the live figures.
// A parent that is not a family is a 404 *Error.
func (c *Client) SubBudgets(ctx context.Context, parent string, state bool) ([]api.Budget, error) {
	var out api.BudgetList
	q := api.BudgetListQuery{State: state, Parent: parent}
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/budgets", query: q.Values()}, &out); err != nil {
		return nil, err
	}
	return out.Budgets, nil
}

// PauseBudget pauses a budget (PATCH /budgets/{key}, our extension): it
// pays for nothing, so its jobs wait, until ResumeBudget or, when until is
// not the zero time, until then (to the millisecond). A later pause
// replaces the end of an earlier one.
func (c *Client) PauseBudget(ctx context.Context, key string, until time.Time) (*api.Budget, error) {
	p := api.BudgetPatch{Paused: api.Set(true), PausedUntil: api.Null[uint64]()}
	if !until.IsZero() {
		p.PausedUntil = api.Set(uint64(max(0, until.UnixMilli())))
	}
	return c.PatchBudget(ctx, key, p)
}

// ResumeBudget ends a budget's pause, with or without an end, at once.
func (c *Client) ResumeBudget(ctx context.Context, key string) (*api.Budget, error) {
	return c.PatchBudget(ctx, key, api.BudgetPatch{Paused: api.Set(false), PausedUntil: api.Null[uint64]()})
}

// BudgetForecast returns when the budget's backlog will have been
// dispatched (GET /budgets/{key}/forecast, our extension); a whatIf that
// is not zero answers for the budget so changed, and changes nothing.
func (c *Client) BudgetForecast(ctx context.Context, key string, whatIf api.WhatIf) (*api.Forecast, error) {
	var out api.Forecast
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/budgets/" + seg(key) + "/forecast", query: whatIf.Values()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Throttle reports that a budget's upstream refused (POST
// /budgets/{key}/throttle, our extension, issue 26), without a job: an
// adaptive budget backs off, and any budget pays nothing for retryAfter
// (the upstream's Retry-After) when it is above zero. It returns the
// budget with its live figures: the effective allocation, the throttles
// counted, when the retry_after ends. retryAfter is sent to the
// millisecond, rounded up so that a sub-millisecond wait is not lost.
func (c *Client) Throttle(ctx context.Context, key string, retryAfter time.Duration) (*api.Budget, error) {
	// Always a body, {} at least: a request without one goes out with an
	// empty chunked body, which the throttle handler reads as bad JSON.
	var body api.Throttle
	if retryAfter > 0 {
		ms := int64((retryAfter + time.Millisecond - 1) / time.Millisecond)
		body.RetryAfterMs = &ms
	}
	req := call{method: http.MethodPost, path: "/budgets/" + seg(key) + "/throttle", body: body}
	var out api.Budget
	if _, err := c.do(ctx, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
