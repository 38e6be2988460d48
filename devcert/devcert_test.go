package devcert_test

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/devcert"
)

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	require.NotNil(t, b)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

func TestAuthority_Issue(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ca, err := devcert.NewAuthority(devcert.Spec{CommonName: "ca", Validity: 48 * time.Hour, Now: now})
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.CertPEM))

	srv, err := ca.Server(devcert.Spec{CommonName: "srv", Hosts: []string{"localhost", "127.0.0.1", "::1", "q.example"}, Validity: time.Hour, Now: now})
	require.NoError(t, err)
	_, err = srv.TLS()
	require.NoError(t, err)
	sc := parse(t, srv.CertPEM)
	for _, host := range []string{"localhost", "127.0.0.1", "::1", "q.example"} {
		require.NoError(t, sc.VerifyHostname(host), host)
	}
	require.Error(t, sc.VerifyHostname("other.example"))
	_, err = sc.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.NoError(t, err)

	cl, err := ca.Client(devcert.Spec{CommonName: "worker", Validity: 100 * time.Hour, Now: now})
	require.NoError(t, err)
	cc := parse(t, cl.CertPEM)
	require.Equal(t, "worker", cc.Subject.CommonName)
	_, err = cc.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	_, err = cc.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.Error(t, err, "a client certificate does not serve")
	require.False(t, cc.NotAfter.After(parse(t, ca.CertPEM).NotAfter), "capped at the CA's validity")

	// A CA read back from its files signs certificates the same roots trust.
	again, err := devcert.LoadAuthority(ca.CertPEM, ca.KeyPEM)
	require.NoError(t, err)
	cl2, err := again.Client(devcert.Spec{CommonName: "w2", Validity: time.Hour})
	require.NoError(t, err)
	_, err = parse(t, cl2.CertPEM).Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
}

func TestAuthority_Errors(t *testing.T) {
	t.Parallel()
	_, err := devcert.NewAuthority(devcert.Spec{CommonName: "ca"})
	require.ErrorContains(t, err, "validity must be positive")
	ca, err := devcert.NewAuthority(devcert.Spec{CommonName: "ca", Validity: time.Hour})
	require.NoError(t, err)
	_, err = ca.Server(devcert.Spec{CommonName: "s", Validity: time.Hour})
	require.ErrorContains(t, err, "at least one host")
	srv, err := ca.Server(devcert.Spec{CommonName: "s", Hosts: []string{"localhost"}, Validity: time.Hour})
	require.NoError(t, err)
	_, err = devcert.LoadAuthority(srv.CertPEM, srv.KeyPEM)
	require.ErrorContains(t, err, "not a CA")
	_, err = devcert.LoadAuthority(ca.CertPEM, srv.KeyPEM)
	require.Error(t, err, "a key that does not match")
	_, err = devcert.LoadAuthority([]byte("junk"), ca.KeyPEM)
	require.ErrorContains(t, err, "no PEM CERTIFICATE block")
}
