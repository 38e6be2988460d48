package cmd

import (
	"crypto/tls"
	"errors"

	"github.com/zizq/zizq/server"
)

// tlsConfig returns the API's TLS from --tls-cert, --tls-key and
// --tls-client-ca, or nil when none is given. Mismatched flags are usage
// errors; unreadable files are startup errors.
func (o *ServeOptions) tlsConfig() (*tls.Config, error) {
	if o.TLSCert == "" && o.TLSKey == "" && o.TLSClientCA == "" {
		return nil, nil
	}
	if o.TLSCert == "" || o.TLSKey == "" {
		if o.TLSCert == "" && o.TLSKey == "" {
			return nil, usageError{errors.New("--tls-client-ca requires --tls-cert and --tls-key")}
		}
		return nil, usageError{errors.New("--tls-cert and --tls-key go together: give both or neither")}
	}
	return server.LoadTLS(o.TLSCert, o.TLSKey, o.TLSClientCA)
}
