package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newHealthCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "health",
		Short: "Check that the server answers",
		Long:  `Check that the server answers: prints "ok" and exits 0, or exits 4 when it cannot be reached.`,
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := f.Client()
			if err != nil {
				return err
			}
			h, err := cl.Health(c.Context())
			if err != nil {
				return err
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, h)
			}
			_, err = fmt.Fprintln(f.IO.Out, h.Status)
			return err
		},
	}
}
