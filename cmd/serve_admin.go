package cmd

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/zizq/zizq/server"
)

// listenAdmin opens the admin port, or nothing with --no-admin. A port in
// use (the default 8901 when a second server starts on the machine) names
// the flags that choose another or none.
func (o *ServeOptions) listenAdmin() (net.Listener, error) {
	if o.NoAdmin {
		return nil, nil
	}
	l, err := listen(o.AdminHost, o.AdminPort)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%w: the admin port %d is taken (another zizq server?): choose a free one with --admin-port (0 picks one), or run without it with --no-admin", err, o.AdminPort)
	}
	return l, err
}

// adminTLSConfig returns the admin port's TLS from --admin-tls-cert,
// --admin-tls-key and --admin-tls-client-ca, or nil when none is given;
// the rules are the API's (tlsConfig).
func (o *ServeOptions) adminTLSConfig() (*tls.Config, error) {
	if o.AdminTLSCert == "" && o.AdminTLSKey == "" && o.AdminTLSCCA == "" {
		return nil, nil
	}
	if o.AdminTLSCert == "" || o.AdminTLSKey == "" {
		if o.AdminTLSCert == "" && o.AdminTLSKey == "" {
			return nil, usageError{errors.New("--admin-tls-client-ca requires --admin-tls-cert and --admin-tls-key")}
		}
		return nil, usageError{errors.New("--admin-tls-cert and --admin-tls-key go together: give both or neither")}
	}
	return server.LoadTLS(o.AdminTLSCert, o.AdminTLSKey, o.AdminTLSCCA)
}
