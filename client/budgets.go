package client

import (
	"context"
	"net/http"

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
