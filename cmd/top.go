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
}

func newTopCmd(f *Factory) *cobra.Command {
	o := &TopOptions{}
	c := &cobra.Command{
		Use:   "top",
		Short: "Live dashboard of budgets, parked jobs and queues",
		Long: `Open a full-screen dashboard of the server at --url: live token levels,
parked counts and queues, refreshed about twice a second. It survives the
server going away and recovers when it comes back. Honours NO_COLOR.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// Flag mistakes first (building a client sends nothing), then
			// the terminal, before the dashboard sends its first request.
			cl, err := f.newClient(client.Options{Timeout: 2 * time.Second, Retries: -1, UserAgent: "zizq-top/" + version})
			if err != nil {
				return err
			}
			if !isTTY(f.IO.In) || !isTTY(f.IO.Out) {
				return usageError{errNoTerminal}
			}
			return tui.Run(c.Context(), topSource{cl}, tui.Options{
				URL:     cl.URL(),
				Refresh: o.Refresh,
				NoColor: os.Getenv("NO_COLOR") != "",
				Input:   f.IO.In,
				Output:  f.IO.Out,
			})
		},
	}
	durationFlag(c.Flags(), &o.Refresh, "refresh", tui.DefaultRefresh, "how often to poll the server")
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
