package bench

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/server/servertest"
)

// sampleRequests are requests of every shape api.Marshal's fast path
// writes, with strings that need escaping, and some it leaves to the
// general encoder.
func sampleRequests() []api.EnqueueRequest {
	bind := func(key string, cost int64) api.BindingRequest { return api.BindingRequest{Key: &key, Cost: &cost} }
	return []api.EnqueueRequest{
		{Type: api.Ptr("bench"), Queue: api.Ptr("q"), Payload: api.Payload(`{"i":1,"pad":"xx"}`)},
		{Type: api.Ptr(`quo"te\back` + "\n\u00e9\u2028<>&"), Queue: api.Ptr("\x01")},
		{Type: api.Ptr("t"), Priority: api.Ptr(uint16(65535)), Payload: api.Payload(` [1, 2] `)},
		{Type: api.Ptr("t"), Budgets: []api.BindingRequest{bind("a", 1), bind("bé", 3)}},
		{},
		// Left to api.Marshal: a field the appender does not write, a
		// binding without a cost, a payload that is not JSON.
		{Type: api.Ptr("t"), ReadyAt: api.Ptr(uint64(5)), StartWithinMs: api.Ptr(int64(7))},
		{Type: api.Ptr("t"), Budgets: []api.BindingRequest{{Key: api.Ptr("k")}}},
	}
}

func TestCountAnswerJobs(t *testing.T) {
	t.Parallel()
	jobs := []api.Job{{ID: "a", Type: "t"}, {ID: "b", Type: "t"}, {ID: "c", Type: "t"}}
	answer, err := api.Marshal(api.JSON, api.BulkJobs{Jobs: jobs})
	require.NoError(t, err)
	require.Equal(t, 3, countAnswerJobs(answer))
	require.Equal(t, 2, countAnswerJobs([]byte(`{"jobs":[{"type":"t","id":"a"},{ "id":"b"}]}`)), "written otherwise: decoded")
	require.Equal(t, 0, countAnswerJobs([]byte(`{"jobs":[]}`)))
	require.Equal(t, -1, countAnswerJobs([]byte(`not json`)))
}

// Against a real server: the jobs are enqueued as sent, and an answer with
// an error status is an error that says what the server said.
func TestPostBulk_RealServer(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t, servertest.SQLite)
	ctx := context.Background()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	tg := &target{url: srv.URL}
	reqs := sampleRequests()[:4]
	// A type and queue the server takes that still need escaping.
	reqs[1].Type, reqs[1].Queue = api.Ptr(`t"é<>&`+"\u2028"), api.Ptr("q")
	for i := range reqs {
		if reqs[i].Queue == nil {
			reqs[i].Queue = api.Ptr("q")
		}
		if reqs[i].Payload == nil {
			reqs[i].Payload = api.Payload(`null`)
		}
	}
	cl, err := client.New(srv.URL, client.Options{HTTPClient: hc})
	require.NoError(t, err)
	for _, key := range []string{"a", "bé"} {
		_, err := cl.PutBudget(ctx, key, api.BudgetInput{Allocation: api.Ptr(int64(5)),
			Strategy: &api.StrategyInput{Type: api.Ptr(api.StrategyWhileInFlight)}})
		require.NoError(t, err)
	}
	require.NoError(t, tg.postBulk(ctx, hc, 10*time.Second, reqs))

	list, err := cl.ListJobs(ctx, api.JobQuery{})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 4)
	types := map[string]bool{}
	for _, j := range list.Jobs {
		types[j.Type] = true
	}
	require.True(t, types[*reqs[1].Type], "the escaped type arrived as sent: %v", types)

	err = tg.postBulk(ctx, hc, 10*time.Second, []api.EnqueueRequest{{Queue: api.Ptr("q"), Payload: api.Payload(`{}`)}})
	require.ErrorContains(t, err, "400")
	require.ErrorContains(t, err, "type")
	list, err = cl.ListJobs(ctx, api.JobQuery{})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 4, "a refused bulk enqueues nothing")
}
