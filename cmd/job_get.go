package cmd

import "github.com/spf13/cobra"

func newJobGetCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:               "get ID",
		Short:             "Show a job with its payload",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeJobIDs(),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkJobID(args[0]); err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			j, err := cl.GetJob(c.Context(), args[0])
			if err != nil {
				return err
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, j)
			}
			return printJobDetail(f, j)
		},
	}
}
