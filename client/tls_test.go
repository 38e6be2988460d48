package client_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/devcert"
	"github.com/zizq/zizq/server"
)

// pemFiles writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, returning their paths by name.
func pemFiles(t *testing.T) map[string]string {
	t.Helper()
	ca, err := devcert.NewAuthority(devcert.Spec{CommonName: "ca", Validity: time.Hour})
	require.NoError(t, err)
	srv, err := ca.Server(devcert.Spec{CommonName: "s", Hosts: []string{"127.0.0.1"}, Validity: time.Hour})
	require.NoError(t, err)
	cl, err := ca.Client(devcert.Spec{CommonName: "c", Validity: time.Hour})
	require.NoError(t, err)
	dir := t.TempDir()
	files := map[string]string{}
	for name, data := range map[string][]byte{
		"ca": ca.CertPEM, "server": srv.CertPEM, "server-key": srv.KeyPEM, "client": cl.CertPEM, "client-key": cl.KeyPEM,
	} {
		files[name] = filepath.Join(dir, name+".pem")
		require.NoError(t, os.WriteFile(files[name], data, 0o600))
	}
	return files
}

func TestClient_MutualTLS(t *testing.T) {
	t.Parallel()
	f := pemFiles(t)
	url := startServer(t, func(o *server.Options) {
		cfg, err := server.LoadTLS(f["server"], f["server-key"], f["ca"])
		require.NoError(t, err)
		o.HTTP.TLS = cfg
	})
	url = strings.Replace(url, "http://", "https://", 1)
	ctx := ctxT(t)

	cfg, err := client.TLSConfig(f["ca"], f["client"], f["client-key"])
	require.NoError(t, err)
	c, err := client.New(url, client.Options{TLS: cfg})
	require.NoError(t, err)
	_, err = c.Health(ctx)
	require.NoError(t, err)
	j, err := c.Enqueue(ctx, job("q", "t", `{"a":1}`))
	require.NoError(t, err)
	s, err := c.Take(ctx, client.TakeOptions{Queues: []string{"q"}})
	require.NoError(t, err)
	got, err := s.Next()
	require.NoError(t, err)
	require.Equal(t, j.ID, got.ID)
	require.NoError(t, c.Ack(ctx, j.ID))
	require.NoError(t, s.Close())

	// Without a client certificate, or without the CA, the server cannot be
	// reached.
	for _, files := range [][3]string{{f["ca"], "", ""}, {"", f["client"], f["client-key"]}} {
		cfg, err := client.TLSConfig(files[0], files[1], files[2])
		require.NoError(t, err)
		c, err := client.New(url, client.Options{TLS: cfg, Retries: -1})
		require.NoError(t, err)
		_, err = c.Health(ctx)
		require.True(t, client.IsUnreachable(err), "%v", err)
	}
}

func TestTLSConfig_Errors(t *testing.T) {
	t.Parallel()
	f := pemFiles(t)
	_, err := client.TLSConfig("", f["client"], "")
	require.ErrorContains(t, err, "give both or neither")
	_, err = client.TLSConfig(f["client-key"], "", "")
	require.ErrorContains(t, err, "no PEM certificate found")
	_, err = client.TLSConfig(filepath.Join(t.TempDir(), "nope.pem"), "", "")
	require.ErrorContains(t, err, "read CA certificate")
	_, err = client.TLSConfig("", f["client"], f["server-key"])
	require.ErrorContains(t, err, "load client certificate")
	cfg, err := client.TLSConfig(f["ca"], "", "")
	require.NoError(t, err)
	_, err = client.New("https://127.0.0.1:1", client.Options{TLS: cfg, HTTPClient: &http.Client{}})
	require.ErrorContains(t, err, "not in Options.TLS")
}
