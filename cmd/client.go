package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// ClientOptions are the global flags of the commands that talk to a
// server.
type ClientOptions struct {
	URL     string
	Output  string
	Timeout time.Duration
	// TLS: the CA to trust, and the client certificate of mutual TLS.
	CACert, ClientCert, ClientKey string
}

// Output formats of -o/--output.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// Factory hands the client commands their dependencies, built lazily from
// the global flags once they are parsed.
type Factory struct {
	IO   IO
	Opts *ClientOptions

	client *client.Client
}

// Client returns the client of the server named by --url.
func (f *Factory) Client() (*client.Client, error) {
	if f.client != nil {
		return f.client, nil
	}
	timeout := f.Opts.Timeout
	if timeout == 0 {
		timeout = -1 // --timeout 0: no limit
	}
	c, err := f.newClient(client.Options{Timeout: timeout, UserAgent: "zizq-cli/" + version})
	if err != nil {
		return nil, err
	}
	f.client = c
	return c, nil
}

// JSON reports whether -o json was asked for.
func (f *Factory) JSON() bool { return f.Opts.Output == outputJSON }

// addClientCommands adds the commands that talk to a running server, each
// with the client flags: they are not root flags, so that the commands that
// talk to none (serve, restore, tls, completion) do not take them.
func addClientCommands(root *cobra.Command, streams IO) {
	o := &ClientOptions{}
	f := &Factory{IO: streams, Opts: o}
	for _, c := range []*cobra.Command{
		newBudgetCmd(f),
		newCronCmd(f),
		newJobCmd(f),
		newHealthCmd(f),
		newVersionCmd(f),
		newTopCmd(f),
		newBackupCmd(f),
		newCompactCmd(f),
		newResetCmd(f),
		newBenchCmd(f),
	} {
		addClientFlags(c, o)
		root.AddCommand(c)
	}
	root.AddCommand(newWorkCmd(f)) // its --timeout is the job's: it declares its own client flags
	acceptClientFlagsFirst(root)
}

// acceptClientFlagsFirst lets the root read the client flags too, hidden
// and for itself alone: `zizq --url URL typo`, and completing after
// `zizq --url URL`, then meet the command word rather than "unknown flag:
// --url". The command found parses them again as its own.
func acceptClientFlagsFirst(root *cobra.Command) {
	declareClientFlags(root.Flags(), &ClientOptions{})
	root.Flags().VisitAll(func(fl *pflag.Flag) { fl.Hidden = true })
	// Cobra completes no command name after a flag local to the root.
	root.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		given := false
		c.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) { given = given || fl.Changed })
		if len(args) > 0 || !given {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return subcommandNames(c, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// declareClientFlags declares the client flags on fs.
func declareClientFlags(fs *pflag.FlagSet, o *ClientOptions) {
	fs.StringVar(&o.URL, "url", client.DefaultURL, "URL of the zizq server")
	withEnv(fs, "url", "ZIZQ_URL")
	fs.StringVarP(&o.Output, "output", "o", outputTable, "output format: table or json")
	durationFlag(fs, &o.Timeout, "timeout", 30*time.Second, "how long to wait for each answer of the server (0: no limit)")
	withEnv(fs, "timeout", "ZIZQ_TIMEOUT")
	addClientTLSFlags(fs, o)
}

// noJSONAnnotation marks a client command that has no JSON output (its
// value says why), so that -o json is refused rather than ignored.
const noJSONAnnotation = "zizq_no_json"

// addClientFlags declares the client flags on c and its subcommands, and
// checks them before c runs.
func addClientFlags(c *cobra.Command, o *ClientOptions) {
	declareClientFlags(c.PersistentFlags(), o)
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputTable, outputJSON}, cobra.ShellCompDirectiveNoFileComp))
	c.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := applyEnv(c); err != nil {
			return err
		}
		if o.Output != outputTable && o.Output != outputJSON {
			return usageError{fmt.Errorf("invalid --output %q: use table or json", o.Output)}
		}
		if o.Output == outputJSON && c.Annotations[noJSONAnnotation] != "" {
			return usageError{fmt.Errorf("%s has no -o json: %s", c.CommandPath(), c.Annotations[noJSONAnnotation])}
		}
		return nil
	}
}

// completionTimeout bounds the server calls made while completing a word:
// a shell must not hang on a server that is down.
const completionTimeout = time.Second

// completionClient is a client for shell completion: flags are parsed but
// the pre-run hooks (which apply the environment) have not run.
func (f *Factory) completionClient(c *cobra.Command) (*client.Client, context.Context, context.CancelFunc, bool) {
	if applyEnv(c) != nil {
		return nil, nil, nil, false
	}
	cl, err := f.newClient(client.Options{Timeout: completionTimeout, Retries: -1})
	if err != nil {
		return nil, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	return cl, ctx, cancel, true
}

// completeBudgetKeys offers the server's budget keys.
func (f *Factory) completeBudgetKeys(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	cl, ctx, cancel, ok := f.completionClient(c)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cancel()
	budgets, err := cl.ListBudgets(ctx, false)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	keys := make([]string, 0, len(budgets))
	for _, b := range budgets {
		keys = append(keys, b.Key)
	}
	return keys, cobra.ShellCompDirectiveNoFileComp
}

// completeBudgetArg completes the first argument with a budget key.
func (f *Factory) completeBudgetArg(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return f.completeBudgetKeys(c, args, toComplete)
}

// completionJobs is how many of the newest jobs completion offers: a
// listing carries payloads, so not every job.
const completionJobs = 500

// completeJobIDs completes the first argument with the IDs of the
// server's newest jobs in the statuses given (any when none), each with its
// queue, type and status as the description.
func (f *Factory) completeJobIDs(statuses ...string) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cl, ctx, cancel, ok := f.completionClient(c)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer cancel()
		page, err := cl.ListJobs(ctx, api.JobQuery{Statuses: statuses, Order: api.OrderDesc, Limit: completionJobs})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []string
		for _, j := range page.Jobs {
			if strings.HasPrefix(j.ID, toComplete) {
				ids = append(ids, j.ID+"\t"+j.Queue+" "+j.Type+" "+j.Status)
			}
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeQueues offers the server's queue names.
func (f *Factory) completeQueues(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	cl, ctx, cancel, ok := f.completionClient(c)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cancel()
	queues, err := cl.Queues(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return queues, cobra.ShellCompDirectiveNoFileComp
}

// requireFlags fails with a usage error when a required flag is missing
// (cobra's own check is not a flag error, so it would exit 1).
func requireFlags(c *cobra.Command, names ...string) error {
	for _, n := range names {
		if !c.Flags().Changed(n) {
			return usageError{fmt.Errorf("required flag --%s not set", n)}
		}
	}
	return nil
}

// exclusiveFlags fails with a usage error when more than one of the flags
// is given.
func exclusiveFlags(c *cobra.Command, names ...string) error {
	var set []string
	for _, n := range names {
		if c.Flags().Changed(n) {
			set = append(set, "--"+n)
		}
	}
	if len(set) > 1 {
		return usageError{fmt.Errorf("%s and %s cannot be used together", set[0], set[1])}
	}
	return nil
}

// parentCmd is a command that only groups others: run bare it prints its
// help, and an unknown subcommand is a usage error.
func parentCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(subs...)
	return c
}
