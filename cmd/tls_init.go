package cmd

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/devcert"
)

func newTLSInitCmd(o *TLSOptions, streams IO) *cobra.Command {
	var (
		cn   string
		sans []string
	)
	c := &cobra.Command{
		Use:   "init",
		Short: "Create a development CA, a server certificate and a client certificate",
		Long: `Create everything needed to try TLS and mutual TLS at once: a CA (ca.pem,
ca-key.pem), a server certificate for localhost, 127.0.0.1, ::1 and every
--san (server.pem, server-key.pem) and a client certificate (client.pem,
client-key.pem), then print how to use them.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.checkFree(tlsCAName, tlsServerName, tlsClientName); err != nil {
				return err
			}
			caSpec, err := o.spec(cn, nil)
			if err != nil {
				return err
			}
			ca, err := devcert.NewAuthority(caSpec)
			if err != nil {
				return err
			}
			srvSpec, _ := o.spec(tlsServerCN, serverHosts(sans))
			srv, err := ca.Server(srvSpec)
			if err != nil {
				return err
			}
			clSpec, _ := o.spec(tlsClientCN, nil)
			cl, err := ca.Client(clSpec)
			if err != nil {
				return err
			}
			var files []pemFile
			files = append(files, o.pairFiles(tlsCAName, "CA", ca.Pair)...)
			files = append(files, o.pairFiles(tlsServerName, "server", srv)...)
			files = append(files, o.pairFiles(tlsClientName, "client", cl)...)
			if err := o.write(streams.Out, files); err != nil {
				return err
			}
			d := o.dir()
			p := func(name string) string { return filepath.Join(d, name) }
			fmt.Fprintf(streams.Out, `
Serve with mutual TLS:
  zizq serve --tls-cert %s --tls-key %s --tls-client-ca %s
Then talk to it:
  zizq --url https://127.0.0.1:7890 --ca-cert %s --client-cert %s --client-key %s health
`, p("server.pem"), p("server-key.pem"), p("ca.pem"), p("ca.pem"), p("client.pem"), p("client-key.pem"))
			return nil
		},
	}
	c.Flags().StringVar(&cn, "cn", tlsCACN, "common name of the CA")
	sanFlag(c.Flags(), &sans)
	return c
}
