package client

import (
	"context"
	"net/http"

	"github.com/zizq/zizq/api"
)

// ListCronGroups returns the name of every cron group, sorted (GET /crons).
func (c *Client) ListCronGroups(ctx context.Context) ([]string, error) {
	var out api.CronList
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/crons"}, &out); err != nil {
		return nil, err
	}
	return out.Crons, nil
}

// GetCronGroup returns a cron group with its entries (GET /crons/{g}).
func (c *Client) GetCronGroup(ctx context.Context, name string) (*api.CronGroup, error) {
	return c.cronGroup(ctx, call{method: http.MethodGet, path: cronPath(name)})
}

// PutCronGroup creates or replaces a whole cron group (PUT /crons/{g}):
// entries not in req are deleted, unchanged schedules keep their state.
// A nil req.Entries is sent as an empty list.
func (c *Client) PutCronGroup(ctx context.Context, name string, req api.CronGroupRequest) (*api.CronGroup, error) {
	if req.Entries == nil {
		req.Entries = []api.CronEntryRequest{}
	}
	return c.cronGroup(ctx, call{method: http.MethodPut, path: cronPath(name), body: req})
}

// PauseCronGroup pauses (or, with false, resumes) a cron group (PATCH
// /crons/{g}).
func (c *Client) PauseCronGroup(ctx context.Context, name string, paused bool) (*api.CronGroup, error) {
	return c.cronGroup(ctx, call{method: http.MethodPatch, path: cronPath(name), body: api.CronPause{Paused: &paused}})
}

// DeleteCronGroup deletes a cron group and its entries (DELETE /crons/{g}).
func (c *Client) DeleteCronGroup(ctx context.Context, name string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: cronPath(name)}, nil)
	return err
}

// DeleteCronGroups deletes every cron group and says how many there were
// (DELETE /crons).
func (c *Client) DeleteCronGroups(ctx context.Context) (int64, error) {
	var out api.Deleted
	if _, err := c.do(ctx, call{method: http.MethodDelete, path: "/crons"}, &out); err != nil {
		return 0, err
	}
	return out.Deleted, nil
}

// GetCronEntry returns one entry of a group (GET /crons/{g}/entries/{e}).
func (c *Client) GetCronEntry(ctx context.Context, group, name string) (*api.CronEntry, error) {
	return c.cronEntry(ctx, call{method: http.MethodGet, path: cronEntryPath(group, name)})
}

// AddCronEntry adds an entry to a group, creating the group if needed
// (POST /crons/{g}/entries); an entry of that name is a 409 *Error.
func (c *Client) AddCronEntry(ctx context.Context, group string, req api.CronEntryRequest) (*api.CronEntry, error) {
	return c.cronEntry(ctx, call{method: http.MethodPost, path: cronPath(group) + "/entries", body: req})
}

// PutCronEntry creates or replaces the entry name of a group (PUT
// /crons/{g}/entries/{e}); req.Name is set to name when empty.
func (c *Client) PutCronEntry(ctx context.Context, group, name string, req api.CronEntryRequest) (*api.CronEntry, error) {
	if req.Name == nil {
		req.Name = &name
	}
	return c.cronEntry(ctx, call{method: http.MethodPut, path: cronEntryPath(group, name), body: req})
}

// PauseCronEntry pauses (or, with false, resumes) one entry (PATCH
// /crons/{g}/entries/{e}).
func (c *Client) PauseCronEntry(ctx context.Context, group, name string, paused bool) (*api.CronEntry, error) {
	return c.cronEntry(ctx, call{method: http.MethodPatch, path: cronEntryPath(group, name), body: api.CronPause{Paused: &paused}})
}

// DeleteCronEntry deletes one entry of a group (DELETE
// /crons/{g}/entries/{e}).
func (c *Client) DeleteCronEntry(ctx context.Context, group, name string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: cronEntryPath(group, name)}, nil)
	return err
}

func (c *Client) cronGroup(ctx context.Context, req call) (*api.CronGroup, error) {
	var out api.CronGroup
	if _, err := c.do(ctx, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) cronEntry(ctx context.Context, req call) (*api.CronEntry, error) {
	var out api.CronEntry
	if _, err := c.do(ctx, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func cronPath(group string) string { return "/crons/" + seg(group) }

func cronEntryPath(group, name string) string { return cronPath(group) + "/entries/" + seg(name) }
