package cmd

import "github.com/spf13/cobra"

func newJobDeleteCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a job",
		Long:  `Delete a job, whatever its status. A job in flight is dropped: its worker's ack will fail.`,
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := f.Client()
			if err != nil {
				return err
			}
			return cl.DeleteJob(c.Context(), args[0])
		},
	}
}
