package cmd

import (
	"github.com/spf13/cobra"
	"github.com/zizq/zizq/devcert"
)

func newTLSCACmd(o *TLSOptions, streams IO) *cobra.Command {
	var cn string
	c := &cobra.Command{
		Use:   "ca",
		Short: "Create a development CA",
		Long: `Create a private certificate authority: ca.pem (give it to clients with
--ca-cert, and to the server with --tls-client-ca for mutual TLS) and
ca-key.pem, which signs the server and client certificates.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.checkFree(tlsCAName); err != nil {
				return err
			}
			spec, err := o.spec(cn, nil)
			if err != nil {
				return err
			}
			ca, err := devcert.NewAuthority(spec)
			if err != nil {
				return err
			}
			return o.write(streams.Out, o.pairFiles(tlsCAName, "CA", ca.Pair))
		},
	}
	c.Flags().StringVar(&cn, "cn", tlsCACN, "common name of the CA")
	return c
}
