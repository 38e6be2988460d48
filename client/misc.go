package client

import (
	"context"
	"net/http"

	"github.com/zizq/zizq/api"
)

// Health checks that the server answers (GET /health).
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	var out api.Health
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/health"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Version returns the server's version (GET /version).
func (c *Client) Version(ctx context.Context) (*api.Version, error) {
	var out api.Version
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/version"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Stats returns the live counts of jobs, queues and budgets (GET /stats).
func (c *Client) Stats(ctx context.Context) (*api.Stats, error) {
	var out api.Stats
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/stats"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Queues returns the names of every queue that holds a stored job
// (GET /queues).
func (c *Client) Queues(ctx context.Context) ([]string, error) {
	var out api.Queues
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/queues"}, &out); err != nil {
		return nil, err
	}
	return out.Queues, nil
}

// Reset deletes every job and budget (POST /reset).
func (c *Client) Reset(ctx context.Context) error {
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/reset"}, nil)
	return err
}
