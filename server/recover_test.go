package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServer_RecoverPanic(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewJSONHandler(&logs, nil))}
	// As the router wraps every handler.
	serve := func(h http.HandlerFunc) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/boom", nil)
		func() {
			defer s.recoverPanic(rec, r)
			h(rec, r)
		}()
		return rec
	}

	rec := serve(func(http.ResponseWriter, *http.Request) { panic("boom") })
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.Equal(t, `{"error":"internal server error"}`, rec.Body.String())
	require.Contains(t, logs.String(), `"msg":"handler panic"`)
	require.Contains(t, logs.String(), `"panic":"boom"`)
	require.Contains(t, logs.String(), "recover_test.go", "the stack is logged")

	rec = serve(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	require.Equal(t, http.StatusNoContent, rec.Code, "no panic, no change")

	// A deliberate abort still aborts (net/http then drops the connection).
	require.PanicsWithValue(t, http.ErrAbortHandler, func() {
		serve(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	})
}
