package client

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/zizq/zizq/api"
)

// Ready reports whether the server has rebuilt its state from its store
// and serves every request (GET /ready). A server still starting answers
// with an *Error of status 503.
func (c *Client) Ready(ctx context.Context) (*api.Health, error) {
	var out api.Health
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/ready"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RetryJob runs a dead job again (POST /jobs/{id}/retry, a zizq extension)
// and returns it, ready, without payload. Its attempts are kept.
func (c *Client) RetryJob(ctx context.Context, id string) (*api.Job, error) {
	var out api.Job
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/jobs/" + seg(id) + "/retry"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Compact asks the server to return the space of deleted jobs to the file
// system and to empty its write-ahead log (POST /compact, on the admin
// port). Only ctx bounds it, as for Backup.
func (c *Client) Compact(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/compact", nil)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	req.Header.Set("User-Agent", c.agent)
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return c.answerError(resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return nil
}

// Backup streams a consistent snapshot of the server's store (POST
// /backup, on the admin port), a tar.gz archive, into w and returns how many bytes it wrote.
// Only ctx bounds it (a large store takes a while), not Options.Timeout. A
// failure after some bytes were written leaves w holding a truncated
// archive: write to a temporary file and keep it only on success.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/backup", nil)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	req.Header.Set("Accept", "application/gzip, "+api.ContentType(api.JSON))
	req.Header.Set("User-Agent", c.agent)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return 0, c.answerError(resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}
