package client_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
)

// testBundle is a real server on 127.0.0.1:0 over a real SQLite file, and
// a client of it.
type testBundle struct {
	url   string
	c     *client.Client
	admin *client.Client // of the server's admin port
}

// formats are the encodings every test runs in.
var formats = []struct {
	name string
	f    api.Format
}{{"JSON", api.JSON}, {"MsgPack", api.MsgPack}}

// startServer serves a fresh data directory until the test ends.
func startServer(t *testing.T, tune ...func(*server.Options)) string {
	t.Helper()
	return servertest.Start(t, tune...).URL
}

// setup starts a server and a client of it in format f.
func setup(t *testing.T, f api.Format, tune ...func(*server.Options)) *testBundle {
	t.Helper()
	ts := servertest.Start(t, tune...)
	c, err := client.New(ts.URL, client.Options{Format: f, Timeout: 10 * time.Second})
	require.NoError(t, err)
	admin, err := client.New(ts.AdminURL, client.Options{Format: f, Timeout: 10 * time.Second})
	require.NoError(t, err)
	return &testBundle{url: ts.URL, c: c, admin: admin}
}

// eachFormat runs fn as a parallel subtest per encoding, each with its own
// server.
func eachFormat(t *testing.T, fn func(t *testing.T, tb *testBundle)) {
	t.Helper()
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			fn(t, setup(t, f.f))
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// job builds an enqueue request; an empty payload is sent as null.
func job(queue, typ, payload string, bindings ...api.BindingRequest) api.EnqueueRequest {
	if payload == "" {
		payload = "null"
	}
	return api.EnqueueRequest{Queue: &queue, Type: &typ, Payload: api.Payload(payload), Budgets: bindings}
}

func bind(key string, cost int64) api.BindingRequest {
	return api.BindingRequest{Key: &key, Cost: &cost}
}

func wif(allocation int64) api.BudgetInput {
	return api.BudgetInput{Allocation: &allocation, Strategy: &api.StrategyInput{Type: api.Ptr(api.StrategyWhileInFlight)}}
}

// freeURL is the URL of a port nothing listens on.
func freeURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	return url
}
