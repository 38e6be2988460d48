// Package tui implements `zizq top`, a live terminal dashboard of a zizq
// server: its budgets and what they hold back, its queues, and its in-flight,
// ready and scheduled jobs.
//
// The dashboard reads data only through [Source]; it never talks HTTP itself.
// All state lives in [Model] and is changed only by Update, on the Bubble Tea
// goroutine; fetching happens in commands whose results come back as messages.
package tui

import (
	"context"
	"io"
	"time"

	"github.com/zizq/zizq/api"
)

// Source is what the dashboard reads from a server. Every call must honour
// ctx: the dashboard bounds each fetch with a timeout.
type Source interface {
	// Stats returns the body of GET /stats (docs/API.md §Stats).
	Stats(ctx context.Context) (api.Stats, error)
	// Jobs lists up to limit jobs with the given status ("in_flight",
	// "ready" or "scheduled"), as GET /jobs?status=…&limit=… does.
	Jobs(ctx context.Context, status string, limit int) (api.JobList, error)
	// Parked lists up to limit of the jobs parked now, as
	// GET /jobs?parked=true&limit=… does (a parked job's status is ready).
	Parked(ctx context.Context, limit int) (api.JobList, error)
	// Why explains what the job waits for (GET /jobs/{id}/why).
	Why(ctx context.Context, id string) (api.Why, error)
	// DeleteJob deletes a job (DELETE /jobs/{id}).
	DeleteJob(ctx context.Context, id string) error
	// PauseCronGroup pauses or resumes a cron group
	// (POST /crons/{group}/pause or /resume).
	PauseCronGroup(ctx context.Context, group string, paused bool) error
	// CronGroup returns a cron group with its entries (GET /crons/{group}).
	CronGroup(ctx context.Context, name string) (api.CronGroup, error)
	// PauseCronEntry pauses or resumes one entry of a cron group.
	PauseCronEntry(ctx context.Context, group, entry string, paused bool) error
	// PauseBudget pauses a budget until resumed, or resumes it
	// (PATCH /budgets/{key} with "paused").
	PauseBudget(ctx context.Context, key string, paused bool) error
	// Forecast says when a budget's backlog drains
	// (GET /budgets/{key}/forecast).
	Forecast(ctx context.Context, key string) (api.Forecast, error)
	// SubBudgets lists a family's live sub-budgets with their figures
	// (GET /budgets?parent=KEY&state=true).
	SubBudgets(ctx context.Context, family string) ([]api.Budget, error)
}

// Stream is the admin port's event stream (GET /events, docs/API.md
// §The event stream) as the dashboard reads it: the job lists and the budgets
// pushed as they change, instead of polled.
type Stream interface {
	// Next returns the next server frame; an error ends the stream.
	Next(ctx context.Context) (api.AdminFrame, error)
	// Send sends one client frame.
	Send(ctx context.Context, f api.ClientFrame) error
	// Close ends the stream.
	Close() error
}

// DefaultRefresh is the polling interval used when Options.Refresh is unset.
const DefaultRefresh = 500 * time.Millisecond

// DefaultRedial is the wait between dials of the event stream.
const DefaultRedial = 5 * time.Second

// Options configures the dashboard.
type Options struct {
	// URL is the server address, shown in the header.
	URL string
	// Dial opens the event stream of the admin port at AdminURL; nil
	// means polling only. While it fails, the dashboard polls the API and
	// says why in its header, and dials again every RedialEvery.
	Dial     func(ctx context.Context) (Stream, error)
	AdminURL string
	// RedialEvery is the wait between two dials of a failed stream; zero
	// or negative means DefaultRedial.
	RedialEvery time.Duration
	// Refresh is the polling interval; zero or negative means DefaultRefresh.
	Refresh time.Duration
	// Now is the clock; nil means time.Now. Only Update reads it.
	Now func() time.Time
	// NoColor renders without any colour or text attributes (NO_COLOR).
	NoColor bool
	// Input and Output are the terminal; nil means standard input and
	// standard output.
	Input  io.Reader
	Output io.Writer
}

func (o Options) withDefaults() Options {
	if o.Refresh <= 0 {
		o.Refresh = DefaultRefresh
	}
	if o.RedialEvery <= 0 {
		o.RedialEvery = DefaultRedial
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
