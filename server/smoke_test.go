package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestServer_Smoke(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	j := tb.enqueue(t, `{"type":"t","queue":"q","payload":{"b":1,"a":2}}`)
	ts := tb.take(t, "prefetch=1")
	got := ts.next(t, 5*time.Second)
	require.Equal(t, j.ID, got.ID)
	require.JSONEq(t, `{"a":2,"b":1}`, string(got.Payload))
	r := tb.reqWith(t, tb.h2, "POST", "/jobs/"+j.ID+"/success", nil)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Equal(t, "HTTP/2.0", r.proto)
	require.Empty(t, r.body)
	r = tb.req(t, "GET", "/jobs/"+j.ID, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "job not found", r.errorText(t))
}

func TestEnqueue_RejectsNumbersNoFloatHolds(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	r := tb.req(t, "POST", "/jobs", `{"type":"t","queue":"q","payload":{"n":1e400}}`)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Contains(t, r.errorText(t), "out of range")
	r = tb.req(t, "GET", "/jobs/count", nil)
	require.JSONEq(t, `{"count":0}`, string(r.body))
}
