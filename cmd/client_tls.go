package cmd

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"github.com/zizq/zizq/client"
)

// addClientTLSFlags declares the TLS flags of the client commands.
func addClientTLSFlags(pf *pflag.FlagSet, o *ClientOptions) {
	pf.StringVar(&o.CACert, "ca-cert", "", "PEM file of the CA that signed the server's certificate (default: the system's CAs)")
	withEnv(pf, "ca-cert", "ZIZQ_CA_CERT")
	pf.StringVar(&o.ClientCert, "client-cert", "", "PEM file of the client certificate, for a server that requires mutual TLS")
	withEnv(pf, "client-cert", "ZIZQ_CLIENT_CERT")
	pf.StringVar(&o.ClientKey, "client-key", "", "PEM file of the client certificate's private key")
	withEnv(pf, "client-key", "ZIZQ_CLIENT_KEY")
}

// tlsConfig returns the TLS settings the flags ask for, nil when none is
// given (an https:// URL then trusts the system's CAs).
func (o *ClientOptions) tlsConfig() (*tls.Config, error) {
	if o.CACert == "" && o.ClientCert == "" && o.ClientKey == "" {
		return nil, nil
	}
	if !strings.HasPrefix(strings.ToLower(o.URL), "https://") {
		return nil, usageError{fmt.Errorf("--ca-cert, --client-cert and --client-key need an https:// --url, not %q", o.URL)}
	}
	if (o.ClientCert == "") != (o.ClientKey == "") {
		return nil, usageError{errors.New("--client-cert and --client-key go together: give both or neither")}
	}
	cfg, err := client.TLSConfig(o.CACert, o.ClientCert, o.ClientKey)
	if err != nil {
		// The files the flags name are missing or hold no certificate: a
		// mistake in the flags, as an unreadable --payload-file is.
		return nil, usageError{err}
	}
	return cfg, nil
}

// newClient returns a client of the server at --url with the TLS of the
// flags and the given options: every command that talks to a server,
// `zizq top` included, gets its client here.
func (f *Factory) newClient(opts client.Options) (*client.Client, error) {
	cfg, err := f.Opts.tlsConfig()
	if err != nil {
		return nil, err
	}
	opts.TLS = cfg
	c, err := client.New(f.Opts.URL, opts)
	if err != nil {
		return nil, usageError{fmt.Errorf("--url: %w", err)}
	}
	return c, nil
}
