package cmd

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/tui"
)

// TopOptions are the settings of `zizq top`.
type TopOptions struct {
	Refresh time.Duration
	Admin   AdminOptions
	// NoEvents polls the API only, even with an admin port.
	NoEvents bool
}

func newTopCmd(f *Factory) *cobra.Command {
	o := &TopOptions{}
	c := &cobra.Command{
		Use:   "top",
		Short: "Live dashboard of budgets, parked jobs and queues",
		Long: `Open a full-screen dashboard of the server: live token levels, parked
counts, queues, cron groups and the in-flight, ready and scheduled jobs.

The job lists and the budgets come pushed by the event stream of the admin
port at --admin-url (GET /events): a job shows up as it is enqueued, and
every list scrolls to its end, past the 200 jobs a window holds. The stats
(queues, crons, parked counts) are polled from the API at --url every
--refresh. When the admin port is off or unreachable (or with
--no-events), the lists are polled too, the header says so, and the
stream is dialled again every few seconds. It survives the server going
away and recovers when it comes back. Honours NO_COLOR.

Keys:
` + tui.KeyHelp(),
		Args:        cobra.NoArgs,
		Annotations: map[string]string{noJSONAnnotation: "it draws a dashboard (zizq budget list -o json, zizq job list -o json print the figures)"},
		RunE: func(c *cobra.Command, _ []string) error {
			// Flag mistakes first (building a client sends nothing), then
			// the terminal, before the dashboard sends its first request.
			ua := "zizq-top/" + version
			cl, err := f.newClient(client.Options{Timeout: 2 * time.Second, Retries: -1, UserAgent: ua})
			if err != nil {
				return err
			}
			opts := tui.Options{
				URL:     cl.URL(),
				Refresh: o.Refresh,
				NoColor: os.Getenv("NO_COLOR") != "",
				Input:   f.IO.In,
				Output:  f.IO.Out,
			}
			if !o.NoEvents {
				if opts.Dial, err = eventsDialer(&o.Admin, ua); err != nil {
					return err
				}
				opts.AdminURL = o.Admin.URL
			}
			if !isTTY(f.IO.In) || !isTTY(f.IO.Out) {
				return usageError{errNoTerminal}
			}
			return tui.Run(c.Context(), topSource{cl}, opts)
		},
	}
	durationFlag(c.Flags(), &o.Refresh, "refresh", tui.DefaultRefresh, "how often to poll the server's stats (and its job lists without the event stream)")
	addAdminFlags(c, &o.Admin)
	c.Flags().BoolVar(&o.NoEvents, "no-events", false, "poll the API only; do not open the admin port's event stream")
	return c
}

// errNoTerminal refuses a dashboard whose keys or screen would not be a
// terminal (a pipe, a file, a CI log).
var errNoTerminal = errors.New("zizq top needs a terminal: its standard input and output must be an interactive terminal, not a pipe or a file")

// isTTY reports whether the stream s is a terminal. Unlike a check for a
// character device, it is false for /dev/null.
func isTTY(s any) bool {
	f, ok := s.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(f.Fd())
}

// topSource adapts the typed client to what the dashboard reads.
type topSource struct{ c *client.Client }

func (s topSource) Stats(ctx context.Context) (api.Stats, error) {
	st, err := s.c.Stats(ctx)
	if err != nil {
		return api.Stats{}, err
	}
	return *st, nil
}

func (s topSource) Jobs(ctx context.Context, status string, limit int) (api.JobList, error) {
	l, err := s.c.ListJobs(ctx, api.JobQuery{Statuses: []string{status}, Limit: limit})
	if err != nil {
		return api.JobList{}, err
	}
	return *l, nil
}

func (s topSource) Parked(ctx context.Context, limit int) (api.JobList, error) {
	l, err := s.c.ListJobs(ctx, api.JobQuery{Parked: true, Limit: limit})
	if err != nil {
		return api.JobList{}, err
	}
	return *l, nil
}

func (s topSource) Why(ctx context.Context, id string) (api.Why, error) {
	w, err := s.c.Why(ctx, id)
	if err != nil {
		return api.Why{}, err
	}
	return *w, nil
}

func (s topSource) DeleteJob(ctx context.Context, id string) error { return s.c.DeleteJob(ctx, id) }

func (s topSource) PauseCronGroup(ctx context.Context, group string, paused bool) error {
	_, err := s.c.PauseCronGroup(ctx, group, paused)
	return err
}

func (s topSource) CronGroup(ctx context.Context, name string) (api.CronGroup, error) {
	g, err := s.c.GetCronGroup(ctx, name)
	if err != nil {
		return api.CronGroup{}, err
	}
	return *g, nil
}

func (s topSource) PauseCronEntry(ctx context.Context, group, entry string, paused bool) error {
	_, err := s.c.PauseCronEntry(ctx, group, entry, paused)
	return err
}

func (s topSource) PauseBudget(ctx context.Context, key string, paused bool) error {
	var err error
	if paused {
		_, err = s.c.PauseBudget(ctx, key, time.Time{})
	} else {
		_, err = s.c.ResumeBudget(ctx, key)
	}
	return err
}

func (s topSource) Forecast(ctx context.Context, key string) (api.Forecast, error) {
	f, err := s.c.BudgetForecast(ctx, key, api.WhatIf{})
	if err != nil {
		return api.Forecast{}, err
	}
	return *f, nil
}

func (s topSource) SubBudgets(ctx context.Context, family string) ([]api.Budget, error) {
	return s.c.SubBudgets(ctx, family, true)
}
