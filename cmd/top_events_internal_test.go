package cmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/servertest"
)

// A refused event stream says why: the server's own reason (a follower
// names the leader's admin port), or, for --admin-url pointed at the API
// port, that the admin port is needed and which flag names it.
func TestEventsDialer_SaysWhy(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"this server is a follower: use the admin port of the leader, http://10.0.0.2:8901 (the leader's API is http://10.0.0.2:7890)"}`))
	}))
	defer follower.Close()
	for _, c := range []struct{ url, want string }{
		{srv.URL, "GET /events at --admin-url " + srv.URL + ": not found: that is not an admin port (the API port?). " +
			"GET /events is served on the admin port only: point --admin-url (or ZIZQ_ADMIN_URL) at the server's --admin-host and --admin-port"},
		{follower.URL, "open the event stream: 503 Service Unavailable: this server is a follower: use the admin port of the leader, http://10.0.0.2:8901 (the leader's API is http://10.0.0.2:7890)"},
	} {
		dial, err := eventsDialer(&AdminOptions{URL: c.url}, "test")
		require.NoError(t, err)
		_, err = dial(context.Background())
		require.ErrorContains(t, err, c.want)
	}
	dial, err := eventsDialer(&AdminOptions{URL: srv.AdminURL}, "test")
	require.NoError(t, err)
	s, err := dial(context.Background())
	require.NoError(t, err, "the admin port's stream opens")
	require.NoError(t, s.Close())
}
