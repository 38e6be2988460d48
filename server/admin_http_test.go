package server_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store/archive"
	"github.com/zizq/zizq/store/sqlite"
)

// post sends a bodiless POST to url and reads the answer whole.
func postTo(t *testing.T, c *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Post(url, "", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

// TestAdmin_Routes: backup and compact are on the admin port, and backup
// is no longer on the API port, which any worker can reach.
func TestAdmin_Routes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	r := tb.req(t, "POST", "/jobs", `{"type":"t","queue":"q","payload":1}`)
	require.Equal(t, http.StatusCreated, r.status)

	t.Run("BackupNotOnAPIPort", func(t *testing.T) {
		r := tb.req(t, "POST", "/backup", nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, "not found", r.errorText(t))
	})
	t.Run("Backup", func(t *testing.T) {
		resp, body := postTo(t, tb.h1, tb.admin+"/backup")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "application/gzip", resp.Header.Get("Content-Type"))
		require.Equal(t, `attachment; filename="backup.tar.gz"`, resp.Header.Get("Content-Disposition"))
		_, err := archive.Check(bytes.NewReader(body))
		require.NoError(t, err)
	})
	t.Run("Compact", func(t *testing.T) {
		resp, body := postTo(t, tb.h1, tb.admin+"/compact")
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		require.Empty(t, body)
		r := tb.req(t, "GET", "/jobs/count", nil)
		require.Equal(t, http.StatusOK, r.status, "the server serves on")
	})
	t.Run("UnknownAndWrongMethod", func(t *testing.T) {
		resp, _ := postTo(t, tb.h1, tb.admin+"/jobs")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		resp, err := tb.h1.Get(tb.admin + "/compact")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		require.Equal(t, "POST", resp.Header.Get("Allow"))
	})
}

// TestAdmin_CompactFails: a compaction the store cannot do answers 500
// "compact failed" in plain text, as Zizq's, and the server serves on.
func TestAdmin_CompactFails(t *testing.T) {
	t.Parallel()
	tb := setup(t, servertest.SQLite) // a simulated full disk
	servertest.SQLiteDB(t, tb.srv).SimulateFault(sqlite.FaultDiskFull)
	resp, body := postTo(t, tb.h1, tb.admin+"/compact")
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "compact failed\n", string(body))
	servertest.SQLiteDB(t, tb.srv).SimulateFault(sqlite.NoFault)
	resp, _ = postTo(t, tb.h1, tb.admin+"/compact")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

// TestAdmin_MutualTLS: an admin port with its own mTLS refuses a client
// without a certificate its CA signed, and serves one with.
func TestAdmin_MutualTLS(t *testing.T) {
	t.Parallel()
	f := writeTLSFiles(t)
	cfg, err := server.LoadTLS(f.cert, f.key, f.ca)
	require.NoError(t, err)
	tb := setup(t, func(o *server.Options) { o.HTTP.AdminTLS = cfg })
	require.Contains(t, tb.admin, "https://")

	anon := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool}}
	_, err = (&http.Client{Transport: anon}).Post(tb.admin+"/compact", "", nil)
	require.Error(t, err, "a client without a certificate is refused")

	withCert := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool, Certificates: []tls.Certificate{f.client}}}
	resp, _ := postTo(t, &http.Client{Transport: withCert}, tb.admin+"/compact")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	r := tb.req(t, "GET", "/health", nil)
	require.Equal(t, http.StatusOK, r.status, "the API port keeps its own (plain) setting")
}

// TestAdmin_Pprof: the runtime's profiles are on the admin port only when
// asked for, never on the API port.
func TestAdmin_Pprof(t *testing.T) {
	t.Parallel()
	get := func(t *testing.T, url string) (int, string) {
		t.Helper()
		status, body := nodeGet(t, url)
		return status, string(body)
	}
	t.Run("OffByDefault", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		status, _ := get(t, tb.admin+"/debug/pprof/")
		require.Equal(t, http.StatusNotFound, status)
	})
	t.Run("On", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, func(o *server.Options) { o.HTTP.Pprof = true })
		status, body := get(t, tb.admin+"/debug/pprof/")
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, body, "goroutine")
		status, body = get(t, tb.admin+"/debug/pprof/goroutine?debug=1")
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, body, "goroutine profile:")
		status, body = get(t, tb.admin+"/debug/pprof/profile?seconds=1")
		require.Equal(t, http.StatusOK, status)
		require.NotEmpty(t, body, "a CPU profile")
		status, _ = get(t, tb.admin+"/debug/pprof/cmdline")
		require.Equal(t, http.StatusOK, status)
		status, _ = get(t, tb.admin+"/debug/pprof")
		require.Equal(t, http.StatusOK, status, "redirected to the index")
		status, _ = get(t, tb.url+"/debug/pprof/")
		require.Equal(t, http.StatusNotFound, status, "never on the API port")
		r := tb.req(t, "POST", "/jobs", `{"type":"t","queue":"q","payload":1}`)
		require.Equal(t, http.StatusCreated, r.status)
		resp, _ := postTo(t, tb.h1, tb.admin+"/compact")
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "the admin routes serve on")
	})
}
