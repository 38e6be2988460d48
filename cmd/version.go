package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/server/api"
)

func newVersionCmd(f *Factory) *cobra.Command {
	var clientOnly bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the client's and the server's versions",
		Long: `Print the version of this binary and of the server at --url.
-o json prints {"client":{"version":…},"server":{"version":…}}.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			out := struct {
				Client api.Version  `json:"client"`
				Server *api.Version `json:"server,omitempty"`
			}{Client: api.Version{Version: version}}
			if !clientOnly {
				cl, err := f.Client()
				if err != nil {
					return err
				}
				if out.Server, err = cl.Version(c.Context()); err != nil {
					return err
				}
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, out)
			}
			fmt.Fprintf(f.IO.Out, "Client: %s\n", out.Client.Version)
			if out.Server != nil {
				fmt.Fprintf(f.IO.Out, "Server: %s\n", out.Server.Version)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&clientOnly, "client", false, "print only the client's version, without asking the server")
	return c
}
