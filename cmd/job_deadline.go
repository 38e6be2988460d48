package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/zizq/zizq/api"
)

// deadlineFlags are a job's deadline for waiting (docs/API.md §Deadlines):
// --start-by, a time as --at takes it, or --start-within, a duration the
// server counts from the enqueue. At most one of them.
type deadlineFlags struct {
	StartBy     string
	StartWithin time.Duration
}

func (o *deadlineFlags) register(fs *pflag.FlagSet, what string) {
	fs.StringVar(&o.StartBy, "start-by", "", "the job dies if not dispatched by then: RFC 3339 or Unix milliseconds"+what)
	durationFlag(fs, &o.StartWithin, "start-within", 0, "the job dies if not dispatched this long after its enqueue, e.g. 30s, 5m"+what)
}

// apply sets the deadline of the flags on req; with fill, only on a
// request that has none of its own (a bulk line).
func (o *deadlineFlags) apply(c *cobra.Command, req *api.EnqueueRequest, fill bool) error {
	if fill && (req.StartBy != nil || req.StartWithinMs != nil) {
		return nil
	}
	switch {
	case c.Flags().Changed("start-by"):
		at, err := parseTimestamp("start-by", o.StartBy)
		if err != nil {
			return usageError{err}
		}
		req.StartBy = &at
	case c.Flags().Changed("start-within"):
		ms := o.StartWithin.Milliseconds()
		if ms < 1 {
			return usageError{fmt.Errorf("--start-within must be at least 1ms, got %s", formatDuration(o.StartWithin))}
		}
		req.StartWithinMs = &ms
	}
	return nil
}

// check refuses both flags at once, and a value that apply would refuse.
func (o *deadlineFlags) check(c *cobra.Command) error {
	if err := exclusiveFlags(c, "start-by", "start-within"); err != nil {
		return err
	}
	return o.apply(c, &api.EnqueueRequest{}, false)
}
