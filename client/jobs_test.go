package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

func TestClient_Enqueue(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		_, err := tb.c.PutBudget(ctx, "a:b/c d", wif(5))
		require.NoError(t, err)
		req := job("q", "t", `{"z":1,"a":[1,2.5,"x"],"big":12345678901234567890}`, bind("a:b/c d", 2))
		req.Priority = api.Ptr[uint16](7)
		j, err := tb.c.Enqueue(ctx, req)
		require.NoError(t, err)
		require.Len(t, j.ID, api.JobIDLen)
		require.Equal(t, api.StatusReady, j.Status)
		require.Equal(t, uint16(7), j.Priority)
		require.Equal(t, []api.Binding{{Key: "a:b/c d", Cost: 2}}, j.Budgets)
		require.Empty(t, j.Payload, "enqueue answers carry no payload")

		got, err := tb.c.GetJob(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, `{"a":[1,2.5,"x"],"big":12345678901234567890,"z":1}`, string(got.Payload))
		require.Equal(t, "q", got.Queue)

		jobs, err := tb.c.EnqueueBulk(ctx, []api.EnqueueRequest{job("q", "t", `1`), job("r", "u", `"s"`)})
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		require.Equal(t, "r", jobs[1].Queue)

		jobs, err = tb.c.EnqueueBulk(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, jobs)

		_, err = tb.c.EnqueueBulk(ctx, []api.EnqueueRequest{job("q", "t", ""), {}})
		require.True(t, client.IsValidation(err), "%v", err)
		require.Contains(t, err.Error(), "jobs[1]")
	})
}

func TestClient_EnqueueUnique(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		req := job("q", "t", `{"n":1}`)
		req.UniqueKey = api.Ptr("user:42")
		first, err := tb.c.Enqueue(ctx, req)
		require.NoError(t, err)
		require.False(t, *first.Duplicate)
		require.Equal(t, "user:42", first.UniqueKey)
		require.Equal(t, api.UniqueWhileQueued, first.UniqueWhile)

		req.UniqueWhile = api.Ptr(api.UniqueWhileExists)
		dup, err := tb.c.Enqueue(ctx, req)
		require.NoError(t, err, "a duplicate (200) is a success")
		require.True(t, *dup.Duplicate)
		require.Equal(t, first.ID, dup.ID)

		other := job("q", "t", "")
		other.UniqueKey, other.UniqueWhile = api.Ptr("user:43"), api.Ptr(api.UniqueWhileActive)
		jobs, err := tb.c.EnqueueBulk(ctx, []api.EnqueueRequest{req, other, other})
		require.NoError(t, err)
		require.True(t, *jobs[0].Duplicate)
		require.False(t, *jobs[1].Duplicate)
		require.True(t, *jobs[2].Duplicate)
		require.Equal(t, jobs[1].ID, jobs[2].ID)
		require.Equal(t, api.UniqueWhileActive, jobs[1].UniqueWhile)

		got, err := tb.c.GetJob(ctx, first.ID)
		require.NoError(t, err)
		require.Equal(t, "user:42", got.UniqueKey)
	})
}

// TestClient_EnqueueBatched checks that an answer tells a fold from a
// unique duplicate, alone and in a bulk.
func TestClient_EnqueueBatched(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		req := job("q", "t", `{"ids":[1]}`)
		req.Batch = &api.BatchRequest{Key: api.Ptr("k"), When: api.Ptr("true"), Fold: api.Ptr(`$existing | .ids += $new.ids`)}
		first, err := tb.c.Enqueue(ctx, req)
		require.NoError(t, err)
		require.False(t, *first.Folded)
		require.False(t, *first.Duplicate)
		require.Equal(t, &api.Batch{Key: "k", When: "true", Fold: `$existing | .ids += $new.ids`}, first.Batch)

		req.Payload = api.Payload(`{"ids":[2]}`)
		folded, err := tb.c.Enqueue(ctx, req)
		require.NoError(t, err, "a fold (200) is a success")
		require.True(t, *folded.Folded)
		require.False(t, *folded.Duplicate)
		require.Equal(t, first.ID, folded.ID)

		unique := job("q", "t", "")
		unique.UniqueKey = api.Ptr("u")
		jobs, err := tb.c.EnqueueBulk(ctx, []api.EnqueueRequest{unique, unique, req})
		require.NoError(t, err)
		require.Len(t, jobs, 3)
		require.False(t, *jobs[0].Duplicate)
		require.False(t, *jobs[0].Folded)
		require.True(t, *jobs[1].Duplicate)
		require.False(t, *jobs[1].Folded)
		require.True(t, *jobs[2].Folded)
		require.False(t, *jobs[2].Duplicate)
		require.Equal(t, first.ID, jobs[2].ID)

		got, err := tb.c.GetJob(ctx, first.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"ids":[1,2,2]}`, string(got.Payload))
	})
}

func TestClient_ListJobs(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		_, err := tb.c.PutBudget(ctx, "b", wif(100))
		require.NoError(t, err)
		var ids []string
		for i := range 7 {
			req := job("q", "t", `{"n":`+string(rune('0'+i))+`}`)
			if i%2 == 0 {
				req.Budgets = []api.BindingRequest{bind("b", 1)}
				req.Queue = api.Ptr("other")
			}
			req.Priority = api.Ptr(uint16(i))
			j, err := tb.c.Enqueue(ctx, req)
			require.NoError(t, err)
			ids = append(ids, j.ID)
		}
		page, err := tb.c.ListJobs(ctx, api.JobQuery{Limit: 3})
		require.NoError(t, err)
		require.Len(t, page.Jobs, 3)
		require.NotNil(t, page.Pages.Next)
		require.Nil(t, page.Pages.Prev)
		require.NotEmpty(t, page.Jobs[0].Payload, "listings carry payloads")

		next, err := tb.c.NextJobs(ctx, *page.Pages.Next)
		require.NoError(t, err)
		require.Equal(t, ids[3], next.Jobs[0].ID)
		require.NotNil(t, next.Pages.Prev)

		var all []string
		for j, err := range tb.c.AllJobs(ctx, api.JobQuery{Limit: 2}) {
			require.NoError(t, err)
			all = append(all, j.ID)
		}
		require.Equal(t, ids, all)

		cases := []struct {
			name string
			q    api.JobQuery
			want []string
		}{
			{"Queue", api.JobQuery{Queues: []string{"other"}}, []string{ids[0], ids[2], ids[4], ids[6]}},
			{"Type", api.JobQuery{Types: []string{"nope"}}, nil},
			{"Status", api.JobQuery{Statuses: []string{api.StatusReady}}, ids},
			{"Budget", api.JobQuery{BudgetKeys: []string{"b"}}, []string{ids[0], ids[2], ids[4], ids[6]}},
			{"ID", api.JobQuery{IDs: []string{ids[1], ids[5]}}, []string{ids[1], ids[5]}},
			{"Priority", api.JobQuery{Priority: &api.Range{Lo: api.Ptr[uint64](2), Hi: api.Ptr[uint64](3)}}, []string{ids[2], ids[3]}},
			{"Attempts", api.JobQuery{Attempts: &api.Range{Lo: api.Ptr[uint64](1)}}, nil},
			{"ReadyAt", api.JobQuery{ReadyAt: &api.Range{Hi: api.Ptr[uint64](1)}}, nil},
			{"Filter", api.JobQuery{Filter: ".n >= 5"}, []string{ids[5], ids[6]}},
			{"Desc", api.JobQuery{Order: api.OrderDesc, Limit: 2}, []string{ids[6], ids[5]}},
			{"From", api.JobQuery{From: ids[4]}, []string{ids[5], ids[6]}},
		}
		for _, c := range cases {
			page, err := tb.c.ListJobs(ctx, c.q)
			require.NoError(t, err, c.name)
			var got []string
			for _, j := range page.Jobs {
				got = append(got, j.ID)
			}
			require.Equal(t, c.want, got, c.name)
			n, err := tb.c.CountJobs(ctx, c.q)
			if c.q.Order == "" && c.q.From == "" {
				require.NoError(t, err, c.name)
				require.Equal(t, int64(len(c.want)), n, c.name)
			}
		}

		_, err = tb.c.ListJobs(ctx, api.JobQuery{Limit: 5000})
		require.True(t, client.IsValidation(err), "%v", err)
		_, err = tb.c.ListJobs(ctx, api.JobQuery{Filter: "(("})
		require.True(t, client.IsValidation(err), "%v", err)

		// AllJobs yields the error and stops.
		n := 0
		for _, err := range tb.c.AllJobs(ctx, api.JobQuery{Filter: "(("}) {
			require.Error(t, err)
			n++
		}
		require.Equal(t, 1, n)
	})
}

// TestClient_ListJobsParked: Parked lists and counts the parked jobs only,
// and the pages AllJobs follows keep the filter.
func TestClient_ListJobsParked(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		_, err := tb.c.PutBudget(ctx, "one", wif(1))
		require.NoError(t, err)
		var ids []string
		for range 4 {
			j, err := tb.c.Enqueue(ctx, job("q", "t", "", bind("one", 1)))
			require.NoError(t, err)
			ids = append(ids, j.ID)
		}
		_, err = tb.c.Enqueue(ctx, job("q", "u", ""))
		require.NoError(t, err)
		parked := api.JobQuery{Parked: true}
		n, err := tb.c.CountJobs(ctx, parked)
		require.NoError(t, err)
		require.Zero(t, n, "no worker: nothing is parked")

		// A worker holds the budget's only token: the other three park.
		stream, err := tb.c.Take(ctx, client.TakeOptions{Queues: []string{"q"}, Prefetch: 1})
		require.NoError(t, err)
		t.Cleanup(func() { _ = stream.Close() })
		held, err := stream.Next()
		require.NoError(t, err)
		require.Equal(t, ids[0], held.ID)

		n, err = tb.c.CountJobs(ctx, parked)
		require.NoError(t, err)
		require.Equal(t, int64(3), n)
		page, err := tb.c.ListJobs(ctx, parked)
		require.NoError(t, err)
		require.Len(t, page.Jobs, 3)
		var all []string
		for j, err := range tb.c.AllJobs(ctx, api.JobQuery{Parked: true, Limit: 1}) {
			require.NoError(t, err)
			all = append(all, j.ID)
		}
		require.Equal(t, ids[1:], all)
	})
}

func TestClient_ModifyJobs(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		future := uint64(4102444800000) // 2100-01-01
		req := job("q", "t", `{}`)
		req.ReadyAt = &future
		a, err := tb.c.Enqueue(ctx, req)
		require.NoError(t, err)
		require.Equal(t, api.StatusScheduled, a.Status)
		b, err := tb.c.Enqueue(ctx, job("q", "t", `{}`))
		require.NoError(t, err)

		p, err := tb.c.PatchJob(ctx, a.ID, api.JobPatch{
			Queue: api.Ptr("q2"), Priority: api.Ptr[uint16](3), RetryLimit: api.Set[uint32](4),
			Backoff:   api.Set(api.Backoff{Exponent: 2, BaseMs: 10, JitterMs: 5}),
			Retention: api.Set(api.RetentionPatch{DeadMs: api.Set[uint64](1000)}),
		})
		require.NoError(t, err)
		require.Equal(t, "q2", p.Queue)
		require.Equal(t, uint16(3), p.Priority)
		require.Equal(t, uint32(4), *p.RetryLimit)
		require.Equal(t, &api.Backoff{Exponent: 2, BaseMs: 10, JitterMs: 5}, p.Backoff)
		require.Equal(t, uint64(1000), *p.Retention.DeadMs)
		require.Equal(t, api.StatusScheduled, p.Status)

		p, err = tb.c.PatchJob(ctx, a.ID, api.JobPatch{
			ReadyAt: api.Null[uint64](), RetryLimit: api.Null[uint32](), Backoff: api.Null[api.Backoff](), Retention: api.Null[api.RetentionPatch](),
		})
		require.NoError(t, err)
		require.Equal(t, api.StatusReady, p.Status)
		require.Nil(t, p.RetryLimit)
		require.Nil(t, p.Backoff)
		require.Nil(t, p.Retention)

		p, err = tb.c.PatchJob(ctx, a.ID, api.JobPatch{ReadyAt: api.Set(future)})
		require.NoError(t, err)
		require.Equal(t, api.StatusScheduled, p.Status)

		_, err = tb.c.PatchJob(ctx, "0000000000000000000000000", api.JobPatch{})
		require.True(t, client.IsNotFound(err), "%v", err)
		_, err = tb.c.PatchJob(ctx, a.ID, api.JobPatch{Queue: api.Ptr("bad*")})
		require.True(t, client.IsValidation(err), "%v", err)

		n, err := tb.c.PatchJobs(ctx, api.JobQuery{Queues: []string{"q"}}, api.JobPatch{Priority: api.Ptr[uint16](9)})
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		got, err := tb.c.GetJob(ctx, b.ID)
		require.NoError(t, err)
		require.Equal(t, uint16(9), got.Priority)

		require.NoError(t, tb.c.DeleteJob(ctx, b.ID))
		err = tb.c.DeleteJob(ctx, b.ID)
		require.True(t, client.IsNotFound(err), "%v", err)
		_, err = tb.c.GetJob(ctx, b.ID)
		require.True(t, client.IsNotFound(err), "%v", err)

		_, err = tb.c.Enqueue(ctx, job("q3", "t", ""))
		require.NoError(t, err)
		d, err := tb.c.DeleteJobs(ctx, api.JobQuery{Queues: []string{"q3"}})
		require.NoError(t, err)
		require.Equal(t, int64(1), d)
		d, err = tb.c.DeleteJobs(ctx, api.JobQuery{})
		require.NoError(t, err)
		require.Equal(t, int64(1), d)
	})
}

func TestClient_ErrorsAndWhy(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		_, err := tb.c.PutBudget(ctx, "one", wif(1))
		require.NoError(t, err)
		a, err := tb.c.Enqueue(ctx, job("q", "t", "", bind("one", 1)))
		require.NoError(t, err)
		b, err := tb.c.Enqueue(ctx, job("q", "t", "", bind("one", 1)))
		require.NoError(t, err)

		w, err := tb.c.Why(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, api.WaitingWorker, w.WaitingFor)

		s, err := tb.c.Take(ctx, client.TakeOptions{Queues: []string{"q"}, Prefetch: client.Unlimited})
		require.NoError(t, err)
		defer s.Close()
		got, err := s.Next()
		require.NoError(t, err)
		require.Equal(t, a.ID, got.ID)

		w, err = tb.c.Why(ctx, b.ID)
		require.NoError(t, err)
		require.Equal(t, api.WaitingBudget, w.WaitingFor)
		require.Len(t, w.Budgets, 1)
		require.Equal(t, "one", w.Budgets[0].Key)

		failed, err := tb.c.Fail(ctx, a.ID, api.FailureRequest{Message: api.Ptr("boom"), ErrorType: api.Ptr("E"), Backtrace: api.Ptr("bt"), Kill: api.Ptr(true)})
		require.NoError(t, err)
		require.Equal(t, api.StatusDead, failed.Status)
		require.Equal(t, uint32(1), failed.Attempts)

		errs, err := tb.c.ListErrors(ctx, a.ID, api.ErrorsQuery{})
		require.NoError(t, err)
		require.Len(t, errs.Errors, 1)
		require.Equal(t, "boom", errs.Errors[0].Message)
		errs, err = tb.c.ListErrors(ctx, a.ID, api.ErrorsQuery{From: 1, HasFrom: true, Order: "asc", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, errs.Errors)
		rec, err := tb.c.GetError(ctx, a.ID, 1)
		require.NoError(t, err)
		require.Equal(t, "E", rec.ErrorType)
		_, err = tb.c.GetError(ctx, a.ID, 2)
		require.True(t, client.IsNotFound(err), "%v", err)

		w, err = tb.c.Why(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, api.WaitingFinished, w.WaitingFor)
		_, err = tb.c.Why(ctx, "0000000000000000000000000")
		require.True(t, client.IsNotFound(err), "%v", err)
	})
}

// TestClient_AllErrors: the error records of a job, page by page through
// the links the server builds.
func TestClient_AllErrors(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		j, err := tb.c.Enqueue(ctx, job("q", "t", ""))
		require.NoError(t, err)
		s, err := tb.c.Take(ctx, client.TakeOptions{Queues: []string{"q"}})
		require.NoError(t, err)
		defer s.Close()
		for _, msg := range []string{"one", "two", "three"} {
			got, err := s.Next()
			require.NoError(t, err)
			require.Equal(t, j.ID, got.ID)
			_, err = tb.c.Fail(ctx, j.ID, api.FailureRequest{Message: api.Ptr(msg), RetryAt: api.Ptr[uint64](1)})
			require.NoError(t, err)
		}

		var msgs []string
		for rec, err := range tb.c.AllErrors(ctx, j.ID, api.ErrorsQuery{Limit: 1}) {
			require.NoError(t, err)
			msgs = append(msgs, rec.Message)
		}
		require.Equal(t, []string{"one", "two", "three"}, msgs)

		page, err := tb.c.ListErrors(ctx, j.ID, api.ErrorsQuery{Order: api.OrderDesc, Limit: 2})
		require.NoError(t, err)
		require.NotNil(t, page.Pages.Next)
		next, err := tb.c.NextErrors(ctx, *page.Pages.Next)
		require.NoError(t, err)
		require.Len(t, next.Errors, 1)
		require.Equal(t, "one", next.Errors[0].Message)
		back, err := tb.c.NextErrors(ctx, *next.Pages.Prev)
		require.NoError(t, err)
		require.Equal(t, "two", back.Errors[0].Message, "prev runs the other way from the cursor")

		_, err = tb.c.NextErrors(ctx, "/jobs?limit=1")
		require.Error(t, err)
		_, err = tb.c.NextJobs(ctx, "/jobs/"+j.ID+"/errors")
		require.Error(t, err)
	})
}
