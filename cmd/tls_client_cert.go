package cmd

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
)

func newTLSClientCertCmd(o *TLSOptions, streams IO) *cobra.Command {
	var cn, name string
	c := &cobra.Command{
		Use:   "client-cert",
		Short: "Create a client certificate signed by the development CA",
		Long: `Create a client certificate for mutual TLS, NAME.pem and NAME-key.pem (give
them to clients with --client-cert and --client-key), signed by the CA in
the same directory.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if name == "" || strings.ContainsAny(name, `/\`) || name == tlsCAName || name == tlsServerName {
				return usageError{errors.New("--name must be a plain file name other than ca and server")}
			}
			if err := o.checkFree(name); err != nil {
				return err
			}
			spec, err := o.spec(cn, nil)
			if err != nil {
				return err
			}
			ca, err := o.loadCA()
			if err != nil {
				return err
			}
			p, err := ca.Client(spec)
			if err != nil {
				return err
			}
			return o.write(streams.Out, o.pairFiles(name, "client", p))
		},
	}
	c.Flags().StringVar(&cn, "cn", tlsClientCN, "common name of the client certificate")
	c.Flags().StringVar(&name, "name", tlsClientName, "base name of the files")
	return c
}
