package cmd_test

import (
	"bufio"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/cmd"
)

func TestTLSCommands(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := runZizq(t, "", "tls", "init", "--root-dir", root)
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	dir := filepath.Join(root, "tls")
	for _, name := range []string{"ca", "server", "client"} {
		st, err := os.Stat(filepath.Join(dir, name+".pem"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
		st, err = os.Stat(filepath.Join(dir, name+"-key.pem"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "private keys are private")
		require.Contains(t, r.out, "wrote "+filepath.Join(dir, name+".pem"))
	}
	require.Contains(t, r.out, "zizq serve --tls-cert "+filepath.Join(dir, "server.pem"))
	srv := readCert(t, filepath.Join(dir, "server.pem"))
	require.Equal(t, []string{"localhost"}, srv.DNSNames)
	require.Len(t, srv.IPAddresses, 2, "127.0.0.1 and ::1")
	days := srv.NotAfter.Sub(srv.NotBefore).Hours() / 24
	require.InDelta(t, 365, days, 1)

	// Existing files are kept unless --force.
	requireFails(t, runZizq(t, "", "tls", "init", "--root-dir", root), cmd.ExitUsage, "ca.pem exists: keep it, or overwrite it with --force")
	r = runZizq(t, "", "tls", "init", "--root-dir", root, "--force")
	require.Equal(t, cmd.ExitOK, r.code, r.err)

	// One by one, in another directory.
	out := t.TempDir()
	requireFails(t, runZizq(t, "", "tls", "server-cert", "--out-dir", out), cmd.ExitFailure, "create one with 'zizq tls ca'")
	for _, args := range [][]string{
		{"ca", "--cn", "Test CA", "--days", "30"},
		{"server-cert", "--san", "q.example,10.0.0.7", "--san", "localhost"},
		{"client-cert", "--name", "worker-2", "--cn", "worker 2", "--days", "1"},
	} {
		r := runZizq(t, "", append([]string{"tls", "--out-dir", out}, args...)...)
		require.Equal(t, cmd.ExitOK, r.code, "%v: %s", args, r.err)
	}
	ca := readCert(t, filepath.Join(out, "ca.pem"))
	require.Equal(t, "Test CA", ca.Subject.CommonName)
	require.True(t, ca.IsCA)
	srv = readCert(t, filepath.Join(out, "server.pem"))
	require.Equal(t, []string{"localhost", "q.example"}, srv.DNSNames)
	require.Len(t, srv.IPAddresses, 3)
	require.False(t, srv.NotAfter.After(ca.NotAfter), "no longer than the CA")
	cl := readCert(t, filepath.Join(out, "worker-2.pem"))
	require.Equal(t, "worker 2", cl.Subject.CommonName)
	require.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, cl.ExtKeyUsage)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err := cl.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)

	requireFails(t, runZizq(t, "", "tls", "ca", "--out-dir", t.TempDir(), "--days", "0"), cmd.ExitUsage, "--days must be positive")
	requireFails(t, runZizq(t, "", "tls", "client-cert", "--out-dir", out, "--name", "ca"), cmd.ExitUsage, "--name must be")
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	b, _ := pem.Decode(data)
	require.NotNil(t, b, path)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

func TestServe_TLSFlagErrors(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	serve := func(args ...string) result {
		return runZizq(t, "", append([]string{"serve", "--root-dir", root, "--port", "0", "--admin-port", "0"}, args...)...)
	}
	requireFails(t, serve("--tls-cert", "c.pem"), cmd.ExitUsage, "--tls-cert and --tls-key go together")
	requireFails(t, serve("--tls-key", "k.pem"), cmd.ExitUsage, "--tls-cert and --tls-key go together")
	requireFails(t, serve("--tls-client-ca", "ca.pem"), cmd.ExitUsage, "--tls-client-ca requires --tls-cert and --tls-key")
	requireFails(t, serve("--tls-cert", filepath.Join(root, "no.pem"), "--tls-key", filepath.Join(root, "no-key.pem")), cmd.ExitFailure, "load TLS certificate")
	_, err := os.Stat(filepath.Join(root, "data"))
	require.True(t, os.IsNotExist(err), "nothing opened before the flags are checked")
}

// TestServeTLS_EndToEnd runs the real binary with mutual TLS on the
// certificates of `zizq tls init`, and the client commands against it with
// the flags and with the environment.
func TestServeTLS_EndToEnd(t *testing.T) {
	root := t.TempDir()
	r := runZizq(t, "", "tls", "init", "--root-dir", root)
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	d := filepath.Join(root, "tls")
	ca, cert, key := filepath.Join(d, "ca.pem"), filepath.Join(d, "client.pem"), filepath.Join(d, "client-key.pem")
	p, stderr := startServerStderr(t, "--root-dir", root, "--host", "0.0.0.0",
		"--tls-cert", filepath.Join(d, "server.pem"), "--tls-key", filepath.Join(d, "server-key.pem"), "--tls-client-ca", ca)
	require.True(t, strings.HasPrefix(p.url, "https://"), p.url)
	url := strings.NewReplacer("0.0.0.0", "127.0.0.1", "[::]", "127.0.0.1").Replace(p.url)

	tlsArgs := []string{"--url", url, "--ca-cert", ca, "--client-cert", cert, "--client-key", key}
	r = runZizq(t, "", append(tlsArgs, "health")...)
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "ok\n", r.out)
	r = runZizq(t, "", append(tlsArgs, "job", "enqueue", "--queue", "q", "--type", "t", "--payload", `{"a":1}`, "-o", "json")...)
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	r = runZizq(t, "", append(tlsArgs, "job", "count")...)
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "1\n", r.out)

	// Without the client certificate, or without the CA, nothing gets through.
	requireFails(t, runZizq(t, "", "--url", url, "--ca-cert", ca, "health"), cmd.ExitUnreachable, "cannot reach zizq server at "+url)
	requireFails(t, runZizq(t, "", "--url", url, "--client-cert", cert, "--client-key", key, "health"), cmd.ExitUnreachable, "certificate")
	// Mistakes in the flags are usage errors.
	requireFails(t, runZizq(t, "", "--url", url, "--ca-cert", ca, "--client-cert", cert, "health"), cmd.ExitUsage, "--client-cert and --client-key go together")
	requireFails(t, runZizq(t, "", "--url", "http://127.0.0.1:1", "--ca-cert", ca, "health"), cmd.ExitUsage, "need an https:// --url")
	requireFails(t, runZizq(t, "", "--url", url, "--ca-cert", filepath.Join(d, "nope.pem"), "health"), cmd.ExitUsage, "read CA certificate")
	// zizq top builds its client the same way.
	requireFails(t, runZizq(t, "", "--url", url, "--ca-cert", filepath.Join(d, "nope.pem"), "top"), cmd.ExitUsage, "read CA certificate")

	// The same through the environment.
	t.Setenv("ZIZQ_URL", url)
	t.Setenv("ZIZQ_CA_CERT", ca)
	t.Setenv("ZIZQ_CLIENT_CERT", cert)
	t.Setenv("ZIZQ_CLIENT_KEY", key)
	r = runZizq(t, "", "job", "count")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "1\n", r.out)
	t.Setenv("ZIZQ_CLIENT_KEY", "")
	requireFails(t, runZizq(t, "", "health"), cmd.ExitUsage, "--client-cert and --client-key go together")

	p.kill()
	require.NotContains(t, stderr.String(), "without TLS", "no plain-text warning when TLS is on")
}

func TestServe_NonLoopbackWarning(t *testing.T) {
	t.Parallel()
	p, stderr := startServerStderr(t, "--root-dir", t.TempDir(), "--host", "0.0.0.0")
	require.True(t, strings.HasPrefix(p.url, "http://"), p.url)
	p.kill()
	require.Contains(t, stderr.String(), "listening on a non-loopback address without TLS")
}

// lockedBuffer is a strings.Builder safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startServerStderr is startServer keeping the server's standard error.
func startServerStderr(t *testing.T, args ...string) (*proc, *lockedBuffer) {
	t.Helper()
	c := exec.Command(zizqBin, append([]string{"serve", "--port", "0", "--admin-port", "0", "--log-level", "warn"}, args...)...)
	stdout, err := c.StdoutPipe()
	require.NoError(t, err)
	stderr := &lockedBuffer{}
	c.Stderr = stderr
	require.NoError(t, c.Start())
	p := &proc{cmd: c}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			_ = p.cmd.Wait()
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Listening on "); ok {
				found <- strings.Fields(rest)[0]
			}
		}
	}()
	select {
	case p.url = <-found:
	case <-time.After(20 * time.Second):
		t.Fatalf("server did not start: %s", stderr.String())
	}
	return p, stderr
}
