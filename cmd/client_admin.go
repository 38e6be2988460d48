package cmd

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/client"
)

// The commands that talk to the admin port (top, backup, compact) name it with
// --admin-url, and its TLS with --admin-ca-cert, --admin-client-cert and
// --admin-client-key: --url stays the API's for every command (docs/API.md
// §The admin port). The variables are Zizq's own names for its admin tools.

// DefaultAdminURL is where `zizq serve` opens its admin port by default.
const DefaultAdminURL = "http://127.0.0.1:8901"

// AdminOptions are the flags of the admin port.
type AdminOptions struct {
	URL                           string
	CACert, ClientCert, ClientKey string
}

// addAdminFlags declares the admin flags on c.
func addAdminFlags(c *cobra.Command, o *AdminOptions) {
	fs := c.Flags()
	fs.StringVar(&o.URL, "admin-url", DefaultAdminURL, "URL of the server's admin port")
	withEnv(fs, "admin-url", "ZIZQ_ADMIN_URL")
	fs.StringVar(&o.CACert, "admin-ca-cert", "", "PEM file of the CA that signed the admin port's certificate")
	withEnv(fs, "admin-ca-cert", "ZIZQ_ADMIN_TLS_CA")
	fs.StringVar(&o.ClientCert, "admin-client-cert", "", "PEM file of the client certificate, for an admin port that requires mutual TLS")
	withEnv(fs, "admin-client-cert", "ZIZQ_ADMIN_TLS_CLIENT_CERT")
	fs.StringVar(&o.ClientKey, "admin-client-key", "", "PEM file of the admin client certificate's private key")
	withEnv(fs, "admin-client-key", "ZIZQ_ADMIN_TLS_CLIENT_KEY")
}

// adminClient returns a client of the admin port with the given options.
func adminClient(o *AdminOptions, opts client.Options) (*client.Client, error) {
	cfg, err := adminTLS(o)
	if err != nil {
		return nil, err
	}
	opts.TLS = cfg
	c, err := client.New(o.URL, opts)
	if err != nil {
		return nil, usageError{fmt.Errorf("--admin-url: %w", err)}
	}
	return c, nil
}

// adminTLS is the TLS of the admin flags, nil when none is given.
func adminTLS(o *AdminOptions) (*tls.Config, error) {
	if o.CACert == "" && o.ClientCert == "" && o.ClientKey == "" {
		return nil, nil
	}
	if !strings.HasPrefix(strings.ToLower(o.URL), "https://") {
		return nil, usageError{fmt.Errorf("--admin-ca-cert, --admin-client-cert and --admin-client-key need an https:// --admin-url, not %q", o.URL)}
	}
	if (o.ClientCert == "") != (o.ClientKey == "") {
		return nil, usageError{errors.New("--admin-client-cert and --admin-client-key go together: give both or neither")}
	}
	cfg, err := client.TLSConfig(o.CACert, o.ClientCert, o.ClientKey)
	if err != nil {
		return nil, usageError{err}
	}
	return cfg, nil
}

// adminError explains a failure of the admin port's endpoint what (POST
// /backup, POST /compact): a 404 means --admin-url names something that
// is not an admin port, most often the API port, whose routes do not
// include the admin port's. Other errors pass through.
func adminError(o *AdminOptions, what string, err error) error {
	if !client.IsNotFound(err) {
		return err
	}
	return usageError{notAdminPort(o.URL, what)}
}

// notAdminPort says that url, which answered what with 404, is not an
// admin port, and which flags name one.
func notAdminPort(url, what string) error {
	return fmt.Errorf("%s at --admin-url %s: not found: that is not an admin port (the API port?). %s is served on the admin port only: "+
		"point --admin-url (or ZIZQ_ADMIN_URL) at the server's --admin-host and --admin-port (default %s)", what, url, what, DefaultAdminURL)
}
