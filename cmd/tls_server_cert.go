package cmd

import "github.com/spf13/cobra"

func newTLSServerCertCmd(o *TLSOptions, streams IO) *cobra.Command {
	var (
		cn   string
		sans []string
	)
	c := &cobra.Command{
		Use:   "server-cert",
		Short: "Create a server certificate signed by the development CA",
		Long: `Create server.pem and server-key.pem (for 'zizq serve --tls-cert --tls-key'),
signed by the CA in the same directory, valid for localhost, 127.0.0.1, ::1
and every --san.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.checkFree(tlsServerName); err != nil {
				return err
			}
			spec, err := o.spec(cn, serverHosts(sans))
			if err != nil {
				return err
			}
			ca, err := o.loadCA()
			if err != nil {
				return err
			}
			p, err := ca.Server(spec)
			if err != nil {
				return err
			}
			return o.write(streams.Out, o.pairFiles(tlsServerName, "server", p))
		},
	}
	c.Flags().StringVar(&cn, "cn", tlsServerCN, "common name of the server certificate")
	sanFlag(c.Flags(), &sans)
	return c
}
