package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

// versions is what `zizq version -o json` prints.
type versions struct {
	Client api.Version  `json:"client"`
	Server *api.Version `json:"server,omitempty"`
}

func newVersionCmd(f *Factory) *cobra.Command {
	var clientOnly, needServer bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the client's and the server's versions",
		Long: `Print the version of this binary, and of the server at --url when it answers.
A server that cannot be asked is noted on standard error and the command
still succeeds, unless --server is given (then it fails, exit 4 when
unreachable). --client does not ask the server. zizq --version prints this
binary's version alone.

-o json prints {"client":{"version":…},"server":{"version":…}}, without
"server" when it was not asked or did not answer.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := exclusiveFlags(c, "client", "server"); err != nil {
				return err
			}
			out := versions{Client: api.Version{Version: version}}
			if !clientOnly {
				cl, err := f.Client()
				if err != nil {
					return err
				}
				out.Server, err = cl.Version(c.Context())
				if err != nil && needServer {
					return err
				}
				if err != nil {
					fmt.Fprintf(f.IO.Err, "zizq: no server version: %v\n", err)
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
	c.Flags().BoolVar(&needServer, "server", false, "fail when the server's version cannot be asked")
	return c
}
