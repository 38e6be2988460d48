package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/devcert"
	"github.com/zizq/zizq/server"
)

// tlsFiles is development TLS material written to a test's directory.
type tlsFiles struct {
	ca, caKey, cert, key, clientCert, clientKey string
	pool                                        *x509.CertPool
	client                                      tls.Certificate
}

func writeTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	ca, err := devcert.NewAuthority(devcert.Spec{CommonName: "test CA", Validity: time.Hour})
	require.NoError(t, err)
	srv, err := ca.Server(devcert.Spec{CommonName: "zizq", Hosts: []string{"localhost", "127.0.0.1"}, Validity: time.Hour})
	require.NoError(t, err)
	cl, err := ca.Client(devcert.Spec{CommonName: "worker", Validity: time.Hour})
	require.NoError(t, err)
	f := tlsFiles{pool: x509.NewCertPool()}
	for _, w := range []struct {
		path *string
		name string
		data []byte
	}{
		{&f.ca, "ca.pem", ca.CertPEM}, {&f.caKey, "ca-key.pem", ca.KeyPEM},
		{&f.cert, "server.pem", srv.CertPEM}, {&f.key, "server-key.pem", srv.KeyPEM},
		{&f.clientCert, "client.pem", cl.CertPEM}, {&f.clientKey, "client-key.pem", cl.KeyPEM},
	} {
		*w.path = filepath.Join(dir, w.name)
		require.NoError(t, os.WriteFile(*w.path, w.data, 0o600))
	}
	require.True(t, f.pool.AppendCertsFromPEM(ca.CertPEM))
	f.client, err = cl.TLS()
	require.NoError(t, err)
	return f
}

// setupTLS starts a server speaking TLS (mutual when clientCA is set) and
// returns its https URL.
func setupTLS(t *testing.T, f tlsFiles, clientCA string) string {
	t.Helper()
	cfg, err := server.LoadTLS(f.cert, f.key, clientCA)
	require.NoError(t, err)
	tb := setup(t, func(o *server.Options) { o.HTTP.TLS = cfg })
	return strings.Replace(tb.url, "http://", "https://", 1)
}

func getWith(tr *http.Transport, url string) (*http.Response, []byte, error) {
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

func TestServer_TLS(t *testing.T) {
	t.Parallel()
	f := writeTLSFiles(t)
	url := setupTLS(t, f, "")

	t.Run("HTTP1", func(t *testing.T) {
		resp, body, err := getWith(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool}}, url+"/health")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "HTTP/1.1", resp.Proto)
		require.JSONEq(t, `{"status":"ok"}`, string(body))
	})
	t.Run("HTTP2", func(t *testing.T) {
		resp, body, err := getWith(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool}, ForceAttemptHTTP2: true}, url+"/health")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "HTTP/2.0", resp.Proto)
		require.JSONEq(t, `{"status":"ok"}`, string(body))
	})
	t.Run("ALPN", func(t *testing.T) {
		host := strings.TrimPrefix(url, "https://")
		for _, c := range []struct {
			offer []string
			want  string
		}{{[]string{"h2", "http/1.1"}, "h2"}, {[]string{"http/1.1"}, "http/1.1"}} {
			conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: f.pool, NextProtos: c.offer})
			require.NoError(t, err)
			require.Equal(t, c.want, conn.ConnectionState().NegotiatedProtocol)
			require.NoError(t, conn.Close())
		}
	})
	t.Run("UnknownCA", func(t *testing.T) {
		_, _, err := getWith(&http.Transport{}, url+"/health")
		require.Error(t, err)
		require.Contains(t, err.Error(), "certificate signed by unknown authority")
	})
	t.Run("PlainHTTP", func(t *testing.T) {
		resp, _, err := getWith(&http.Transport{}, strings.Replace(url, "https://", "http://", 1)+"/health")
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a listener is TLS or plain, not both")
	})
}

func TestServer_MutualTLS(t *testing.T) {
	t.Parallel()
	f := writeTLSFiles(t)
	url := setupTLS(t, f, f.ca)
	other := writeTLSFiles(t) // a client certificate from another CA

	for _, c := range []struct {
		name   string
		certs  []tls.Certificate
		h2, ok bool
	}{
		{name: "NoCertificate"},
		{name: "NoCertificateH2", h2: true},
		{name: "OtherCA", certs: []tls.Certificate{other.client}},
		{name: "Certificate", certs: []tls.Certificate{f.client}, ok: true},
		{name: "CertificateH2", certs: []tls.Certificate{f.client}, h2: true, ok: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool, Certificates: c.certs}, ForceAttemptHTTP2: c.h2}
			resp, _, err := getWith(tr, url+"/health")
			if !c.ok {
				require.Error(t, err, "the server must refuse a client without a certificate of its CA")
				return
			}
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			if c.h2 {
				require.Equal(t, "HTTP/2.0", resp.Proto)
			}
		})
	}
}

func TestLoadTLS_Errors(t *testing.T) {
	t.Parallel()
	f := writeTLSFiles(t)
	_, err := server.LoadTLS(f.cert, "", "")
	require.ErrorContains(t, err, "both needed")
	_, err = server.LoadTLS(f.cert, f.clientKey, "")
	require.ErrorContains(t, err, "load TLS certificate")
	_, err = server.LoadTLS(f.cert, f.key, f.key)
	require.ErrorContains(t, err, "no PEM certificate found")
	_, err = server.LoadTLS(f.cert, f.key, filepath.Join(t.TempDir(), "missing.pem"))
	require.ErrorContains(t, err, "load TLS client CA")
	cfg, err := server.LoadTLS(f.cert, f.key, f.ca)
	require.NoError(t, err)
	require.Equal(t, tls.RequireAndVerifyClientCert, cfg.ClientAuth)
}
