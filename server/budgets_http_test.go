package server_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
)

// Helpers of the budget tests carry a "bud" prefix: other test files of the
// package are written concurrently and must not collide with them.

// budMs is the wall clock in milliseconds, as the server stamps budgets.
func budMs() int64 { return time.Now().UnixMilli() }

// budNextMs waits until the millisecond clock has moved past ms, so that a
// later write gets a strictly later updated_at.
func budNextMs(ms int64) {
	for budMs() <= ms {
		time.Sleep(time.Millisecond)
	}
}

// budExact asserts a JSON response byte for byte; length > 0 also checks
// the size (and its Content-Length header) that the seed shows.
func budExact(t *testing.T, r reply, status int, want string, length int) {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Equal(t, want, string(r.body))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	if length > 0 {
		require.Len(t, r.body, length)
		require.Equal(t, strconv.Itoa(length), r.header.Get("Content-Length"))
	}
}

// budError asserts an error response: status and exact JSON body.
func budError(t *testing.T, r reply, status int, msg string) {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	want, err := api.Marshal(api.JSON, api.Error{Error: msg})
	require.NoError(t, err)
	require.Equal(t, string(want), string(r.body))
}

// budPut creates or replaces a budget with PUT and returns it.
func (tb *testBundle) budPut(t *testing.T, key, body string) api.Budget {
	t.Helper()
	r := tb.req(t, "PUT", "/budgets/"+key, body)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var b api.Budget
	r.json(t, &b)
	return b
}

// budGet fetches a budget, with its live state when state is true.
func (tb *testBundle) budGet(t *testing.T, key string, state bool) api.Budget {
	t.Helper()
	path := "/budgets/" + key
	if state {
		path += "?state=true"
	}
	r := tb.req(t, "GET", path, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var b api.Budget
	r.json(t, &b)
	if state {
		require.NotNil(t, b.State, "body: %s", r.body)
	}
	return b
}

// budState fetches a budget's live state.
func (tb *testBundle) budState(t *testing.T, key string) api.BudgetState {
	t.Helper()
	return *tb.budGet(t, key, true).State
}

// budStats fetches GET /stats.
func (tb *testBundle) budStats(t *testing.T) api.Stats {
	t.Helper()
	r := tb.req(t, "GET", "/stats", nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var s api.Stats
	r.json(t, &s)
	return s
}

// budWhy fetches GET /jobs/{id}/why.
func (tb *testBundle) budWhy(t *testing.T, id string) api.Why {
	t.Helper()
	r := tb.req(t, "GET", "/jobs/"+id+"/why", nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var w api.Why
	r.json(t, &w)
	return w
}

// budCount returns GET /jobs/count with the query.
func (tb *testBundle) budCount(t *testing.T, query string) int64 {
	t.Helper()
	r := tb.req(t, "GET", "/jobs/count?"+query, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var c api.Count
	r.json(t, &c)
	return c.Count
}

// budJob enqueues a job of queue q bound as the budgets JSON array says
// ("" for none).
func (tb *testBundle) budJob(t *testing.T, q, budgets string) api.Job {
	t.Helper()
	body := `{"type":"t","queue":"` + q + `","payload":{}`
	if budgets != "" {
		body += `,"budgets":` + budgets
	}
	return tb.enqueue(t, body+"}")
}

// budJobs enqueues n jobs like budJob, in one bulk request.
func (tb *testBundle) budJobs(t *testing.T, n int, q, budgets string) []api.Job {
	t.Helper()
	item := `{"type":"t","queue":"` + q + `","payload":{}`
	if budgets != "" {
		item += `,"budgets":` + budgets
	}
	item += "}"
	items := make([]string, n)
	for i := range items {
		items[i] = item
	}
	r := tb.req(t, "POST", "/jobs/bulk", `{"jobs":[`+strings.Join(items, ",")+`]}`)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var out api.BulkJobs
	r.json(t, &out)
	require.Len(t, out.Jobs, n)
	return out.Jobs
}

const (
	// The budget bodies of the seed's examples.
	budImageService = `{"allocation":10000,"strategy":{"type":"time_based","duration_ms":3600000}}`
	budSchemaBot    = `{"allocation":10,"strategy":{"type":"while_in_flight"}}`
)

// TestBudgets_SeedExamples runs every HTTP example of the seed, each from
// its own fixture: a fresh server holding exactly the state the example
// presupposes (the seed's examples are not one script).
func TestBudgets_SeedExamples(t *testing.T) {
	t.Parallel()

	t.Run("CreateTimeBased", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		before := budMs()
		r := tb.req(t, "POST", "/budgets/image-service", `{
    "allocation": 10000,
    "strategy": {
        "type": "time_based",
        "duration_ms": 3600000
    }
}`)
		after := budMs()
		var b api.Budget
		r.json(t, &b)
		require.GreaterOrEqual(t, int64(b.CreatedAt), before)
		require.LessOrEqual(t, int64(b.CreatedAt), after)
		want := fmt.Sprintf(`{"key":"image-service","allocation":10000,"strategy":{"type":"time_based","duration_ms":3600000},"created_at":%d,"updated_at":%d}`, b.CreatedAt, b.CreatedAt)
		budExact(t, r, http.StatusCreated, want, 151)
		budExact(t, tb.req(t, "GET", "/budgets/image-service", nil), http.StatusOK, want, 151)
	})

	t.Run("DuplicateCreateRejected", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		r := tb.req(t, "POST", "/budgets/image-service", budImageService)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		existing := string(r.body)

		r = tb.req(t, "POST", "/budgets/image-service", `{
    "allocation": 10000,
    "strategy": {
        "type": "time_based",
        "duration_ms": 7200000
    }
}
`)
		budExact(t, r, http.StatusConflict, `{"error":"budget 'image-service' already exists"}`, 49)
		// The existing budget is untouched.
		require.Equal(t, existing, string(tb.req(t, "GET", "/budgets/image-service", nil).body))
	})

	t.Run("ReplaceExisting", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		r := tb.req(t, "POST", "/budgets/image-service", budImageService)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		var created api.Budget
		r.json(t, &created)
		budNextMs(int64(created.CreatedAt))

		before := budMs()
		r = tb.req(t, "PUT", "/budgets/image-service", `{
    "allocation": 10000,
    "strategy": {
        "type": "time_based",
        "duration_ms": 3600000
    }
}`)
		var b api.Budget
		r.json(t, &b)
		require.Equal(t, created.CreatedAt, b.CreatedAt, "created_at is kept")
		require.GreaterOrEqual(t, int64(b.UpdatedAt), before, "updated_at is bumped")
		require.Greater(t, b.UpdatedAt, b.CreatedAt)
		want := fmt.Sprintf(`{"key":"image-service","allocation":10000,"strategy":{"type":"time_based","duration_ms":3600000},"created_at":%d,"updated_at":%d}`, created.CreatedAt, b.UpdatedAt)
		budExact(t, r, http.StatusOK, want, 151)
		budExact(t, tb.req(t, "GET", "/budgets/image-service", nil), http.StatusOK, want, 151)
	})

	t.Run("CreateWhileInFlight", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		r := tb.req(t, "PUT", "/budgets/schema-bot", `{
    "allocation": 10,
    "strategy": {
        "type": "while_in_flight"
    }
}`)
		var b api.Budget
		r.json(t, &b)
		want := fmt.Sprintf(`{"key":"schema-bot","allocation":10,"strategy":{"type":"while_in_flight"},"created_at":%d,"updated_at":%d}`, b.CreatedAt, b.CreatedAt)
		budExact(t, r, http.StatusOK, want, 128)
	})

	t.Run("EnqueueAgainstMultipleBudgets", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "schema-bot", budSchemaBot)
		tb.budPut(t, "image-service", budImageService)

		r := tb.req(t, "POST", "/jobs", `{
    "type": "example",
    "queue": "example",
    "payload": {},
    "budgets": [
        {
            "key": "schema-bot",
            "cost": 2
        },
        {"key": "image-service"}
    ]
}`)
		var j api.Job
		r.json(t, &j)
		want := fmt.Sprintf(`{"id":"%s","type":"example","queue":"example","priority":32768,"status":"ready","ready_at":%d,"attempts":0,"duplicate":false,"folded":false,"budgets":[{"key":"schema-bot","cost":2},{"key":"image-service","cost":1}]}`, j.ID, j.ReadyAt)
		budExact(t, r, http.StatusCreated, want, 249)
	})

	t.Run("EnqueueUsingCreateWith", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		r := tb.req(t, "POST", "/jobs", `{
    "type": "example",
    "queue": "example",
    "payload": {},
    "budgets": [
        {
            "key": "cpu-intensive",
            "create_with": {
                "allocation": 100,
                "strategy": {
                    "type": "while_in_flight"
                }
            }
        }
    ]
}`)
		var j api.Job
		r.json(t, &j)
		want := fmt.Sprintf(`{"id":"%s","type":"example","queue":"example","priority":32768,"status":"ready","ready_at":%d,"attempts":0,"duplicate":false,"folded":false,"budgets":[{"key":"cpu-intensive","cost":1}]}`, j.ID, j.ReadyAt)
		budExact(t, r, http.StatusCreated, want, 219)
		// The budget was created with the job, in the same instant.
		budExact(t, tb.req(t, "GET", "/budgets/cpu-intensive", nil), http.StatusOK,
			fmt.Sprintf(`{"key":"cpu-intensive","allocation":100,"strategy":{"type":"while_in_flight"},"created_at":%d,"updated_at":%d}`, j.ReadyAt, j.ReadyAt), 0)
	})

	t.Run("PatchExisting", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		r := tb.req(t, "POST", "/budgets/image-service", budImageService)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		var created api.Budget
		r.json(t, &created)
		budNextMs(int64(created.CreatedAt))

		r = tb.req(t, "PATCH", "/budgets/image-service", `{
    "strategy": {
        "burst": 50000
    }
}`)
		var b api.Budget
		r.json(t, &b)
		require.Equal(t, created.CreatedAt, b.CreatedAt)
		require.Greater(t, b.UpdatedAt, b.CreatedAt)
		want := fmt.Sprintf(`{"key":"image-service","allocation":10000,"strategy":{"type":"time_based","duration_ms":3600000,"burst":50000},"created_at":%d,"updated_at":%d}`, b.CreatedAt, b.UpdatedAt)
		budExact(t, r, http.StatusOK, want, 165)
	})

	t.Run("ListBudgets", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		// Created in the other order: the list is sorted by key.
		schema := tb.budPut(t, "schema-bot", budSchemaBot)
		tb.budPut(t, "image-service", budImageService)
		r := tb.req(t, "PATCH", "/budgets/image-service", `{"strategy":{"burst":50000}}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		var image api.Budget
		r.json(t, &image)

		want := fmt.Sprintf(`{"budgets":[`+
			`{"key":"image-service","allocation":10000,"strategy":{"type":"time_based","duration_ms":3600000,"burst":50000},"created_at":%d,"updated_at":%d},`+
			`{"key":"schema-bot","allocation":10,"strategy":{"type":"while_in_flight"},"created_at":%d,"updated_at":%d}]}`,
			image.CreatedAt, image.UpdatedAt, schema.CreatedAt, schema.UpdatedAt)
		budExact(t, tb.req(t, "GET", "/budgets", nil), http.StatusOK, want, 308)
	})

	t.Run("DeleteBudget", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "schema-bot", budSchemaBot)
		r := tb.req(t, "DELETE", "/budgets/schema-bot", nil)
		require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
		require.Empty(t, r.body)
		require.Empty(t, r.header.Get("Content-Length"))
		require.Empty(t, r.header.Get("Content-Type"))
		budError(t, tb.req(t, "GET", "/budgets/schema-bot", nil), http.StatusNotFound, "budget 'schema-bot' not found")
	})

	t.Run("DeleteReferencedRejected", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "image-service", budImageService)
		tb.budJob(t, "example", `[{"key":"image-service"}]`)

		r := tb.req(t, "DELETE", "/budgets/image-service", nil)
		budExact(t, r, http.StatusConflict,
			`{"error":"budget 'image-service' is referenced by 1 unfinished job. Delete them or wait for them to finish before deleting it."}`, 128)
		tb.budGet(t, "image-service", false) // still there
	})

	t.Run("ReduceBelowJobCostRejected", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		before := tb.budPut(t, "schema-bot", budSchemaBot)
		tb.budJob(t, "example", `[{"key":"schema-bot","cost":2}]`)

		r := tb.req(t, "PATCH", "/budgets/schema-bot", `{
    "allocation": 1
}`)
		budExact(t, r, http.StatusUnprocessableEntity,
			`{"error":"budget 'schema-bot' cannot allocate 1: 1 unfinished job draw up to 2 from it. Raise the allocation, delete them, or wait for them to drain."}`, 151)
		require.Equal(t, before, tb.budGet(t, "schema-bot", false), "a refused patch changes nothing")
	})
}

// TestBudgets_CreateWithTypo covers the seed's create_with snippet, which
// spells "allocaton": the field is unknown and ignored, so create_with lacks
// its allocation and the enqueue is refused with 400 whether or not the budget
// exists (docs/API.md §Binding jobs to budgets). The corrected spelling works.
func TestBudgets_CreateWithTypo(t *testing.T) {
	t.Parallel()
	snippet := func(allocation string) string {
		return `{"type":"example","queue":"example","payload":{},
    "budgets": [
        {"key": "image-service"},
        {
            "key": "notifications",
            "cost": 5,
            "create_with": {
                "` + allocation + `": 50000,
                "strategy": {
                    "type": "while_in_flight"
                }
            }
        }
    ]
}`
	}

	t.Run("TypoMissingBudget", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "image-service", budImageService)
		r := tb.req(t, "POST", "/jobs", snippet("allocaton"))
		budError(t, r, http.StatusBadRequest, "create_with: invalid JSON: missing field `allocation`")
		budError(t, tb.req(t, "GET", "/budgets/notifications", nil), http.StatusNotFound, "budget 'notifications' not found")
		require.Zero(t, tb.budCount(t, ""))
	})

	t.Run("TypoExistingBudget", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "image-service", budImageService)
		tb.budPut(t, "notifications", `{"allocation":50000,"strategy":{"type":"while_in_flight"}}`)
		r := tb.req(t, "POST", "/jobs", snippet("allocaton"))
		budError(t, r, http.StatusBadRequest, "create_with: invalid JSON: missing field `allocation`")
		require.Zero(t, tb.budCount(t, ""))
	})

	t.Run("CorrectedSpelling", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "image-service", budImageService)
		r := tb.req(t, "POST", "/jobs", snippet("allocation"))
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		var j api.Job
		r.json(t, &j)
		require.Equal(t, []api.Binding{{Key: "image-service", Cost: 1}, {Key: "notifications", Cost: 5}}, j.Budgets)

		created := tb.req(t, "GET", "/budgets/notifications", nil)
		budExact(t, created, http.StatusOK, fmt.Sprintf(
			`{"key":"notifications","allocation":50000,"strategy":{"type":"while_in_flight"},"created_at":%d,"updated_at":%d}`, j.ReadyAt, j.ReadyAt), 0)

		// Later enqueues see it without create_with.
		j2 := tb.budJob(t, "example", `[{"key":"notifications","cost":7}]`)
		require.Equal(t, []api.Binding{{Key: "notifications", Cost: 7}}, j2.Budgets)

		// create_with is ignored when the budget exists: the existing one is
		// authoritative (a cost above the ignored allocation is fine).
		j3 := tb.budJob(t, "example", `[{"key":"notifications","cost":9,"create_with":{"allocation":3,"strategy":{"type":"time_based","duration_ms":1000}}}]`)
		require.Equal(t, []api.Binding{{Key: "notifications", Cost: 9}}, j3.Budgets)
		require.Equal(t, string(created.body), string(tb.req(t, "GET", "/budgets/notifications", nil).body))
		require.Equal(t, int64(3), tb.budCount(t, "budgets.key=notifications"))
	})
}

func TestBudgets_List(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	budExact(t, tb.req(t, "GET", "/budgets", nil), http.StatusOK, `{"budgets":[]}`, 0)
	budExact(t, tb.req(t, "GET", "/budgets?state=true", nil), http.StatusOK, `{"budgets":[]}`, 0)

	// Byte order: upper case before lower case, a prefix before its extensions.
	for _, k := range []string{"b", "a-2", "B", "a", "~"} {
		tb.budPut(t, k, budSchemaBot)
	}
	var list api.BudgetList
	tb.req(t, "GET", "/budgets", nil).json(t, &list)
	var keys []string
	for _, b := range list.Budgets {
		keys = append(keys, b.Key)
		require.Nil(t, b.State)
	}
	require.Equal(t, []string{"B", "a", "a-2", "b", "~"}, keys)

	budError(t, tb.req(t, "GET", "/budgets?bogus=1", nil), http.StatusBadRequest, "invalid query parameters: unknown field `bogus`, expected one of `state`, `parent`")
}

func TestBudgets_Missing(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	const msg = "budget 'nope' not found"
	budError(t, tb.req(t, "GET", "/budgets/nope", nil), http.StatusNotFound, msg)
	budError(t, tb.req(t, "GET", "/budgets/nope?state=true", nil), http.StatusNotFound, msg)
	budError(t, tb.req(t, "PATCH", "/budgets/nope", `{"allocation":3}`), http.StatusNotFound, msg)
	budError(t, tb.req(t, "DELETE", "/budgets/nope", nil), http.StatusNotFound, msg)
	// PATCH never creates.
	budExact(t, tb.req(t, "GET", "/budgets", nil), http.StatusOK, `{"budgets":[]}`, 0)
	// No bulk deletion of budgets (docs/API.md §Budget endpoints).
	r := tb.req(t, "DELETE", "/budgets", nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
}

func TestBudgets_PostPut(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	r := tb.req(t, "POST", "/budgets/k", budSchemaBot)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	budError(t, tb.req(t, "POST", "/budgets/k", budSchemaBot), http.StatusConflict, "budget 'k' already exists")

	// PUT answers 200 when it creates…
	p := tb.budPut(t, "p", `{"allocation":4,"strategy":{"type":"time_based","duration_ms":1000,"burst":2}}`)
	require.Equal(t, p.CreatedAt, p.UpdatedAt)
	require.Equal(t, api.Strategy{Type: "time_based", DurationMs: 1000, Burst: 2}, p.Strategy)
	// …and when it replaces: created_at kept, updated_at bumped, the whole
	// configuration replaced (the burst is gone).
	budNextMs(int64(p.UpdatedAt))
	q := tb.budPut(t, "p", `{"allocation":9,"strategy":{"type":"time_based","duration_ms":5000}}`)
	require.Equal(t, p.CreatedAt, q.CreatedAt)
	require.Greater(t, q.UpdatedAt, p.UpdatedAt)
	require.Equal(t, int64(9), q.Allocation)
	require.Equal(t, api.Strategy{Type: "time_based", DurationMs: 5000}, q.Strategy)
	// Even an identical PUT bumps updated_at.
	budNextMs(int64(q.UpdatedAt))
	s := tb.budPut(t, "p", `{"allocation":9,"strategy":{"type":"time_based","duration_ms":5000}}`)
	require.Greater(t, s.UpdatedAt, q.UpdatedAt)
	require.Equal(t, q.CreatedAt, s.CreatedAt)

	// The body's key is ignored: the path is authoritative.
	r = tb.req(t, "PUT", "/budgets/path-key", `{"key":"body-key","allocation":1,"strategy":{"type":"while_in_flight"},"extra":true}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var b api.Budget
	r.json(t, &b)
	require.Equal(t, "path-key", b.Key)
	budError(t, tb.req(t, "GET", "/budgets/body-key", nil), http.StatusNotFound, "budget 'body-key' not found")

	// burst may exceed the allocation.
	big := tb.budPut(t, "big", `{"allocation":2,"strategy":{"type":"time_based","duration_ms":1000,"burst":20}}`)
	require.Equal(t, int64(20), big.Strategy.Burst)
}

func TestBudgets_Patch(t *testing.T) {
	t.Parallel()

	t.Run("MergeAndClearBurst", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		b := tb.budPut(t, "k", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":4}}`)

		budNextMs(int64(b.UpdatedAt))
		r := tb.req(t, "PATCH", "/budgets/k", `{"allocation":12}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		var p api.Budget
		r.json(t, &p)
		require.Equal(t, int64(12), p.Allocation)
		require.Equal(t, api.Strategy{Type: "time_based", DurationMs: 1000, Burst: 4}, p.Strategy, "omitted fields unchanged")
		require.Equal(t, b.CreatedAt, p.CreatedAt)
		require.Greater(t, p.UpdatedAt, b.UpdatedAt)

		r = tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"duration_ms":2000}}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		r.json(t, &p)
		require.Equal(t, api.Strategy{Type: "time_based", DurationMs: 2000, Burst: 4}, p.Strategy)

		// burst: null removes the override: the key disappears.
		r = tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"burst":null}}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		p = api.Budget{}
		r.json(t, &p)
		budExact(t, r, http.StatusOK, fmt.Sprintf(`{"key":"k","allocation":12,"strategy":{"type":"time_based","duration_ms":2000},"created_at":%d,"updated_at":%d}`, p.CreatedAt, p.UpdatedAt), 0)
		require.Equal(t, int64(12), tb.budState(t, "k").Capacity, "capacity falls back to the allocation")

		// {} changes nothing but updated_at.
		budNextMs(int64(p.UpdatedAt))
		r = tb.req(t, "PATCH", "/budgets/k", `{}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		var q api.Budget
		r.json(t, &q)
		require.Greater(t, q.UpdatedAt, p.UpdatedAt)
		q.UpdatedAt = p.UpdatedAt
		require.Equal(t, p, q)
	})

	t.Run("Nulls", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		b := tb.budPut(t, "k", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000}}`)
		for body, msg := range map[string]string{
			`{"allocation":null}`:               "allocation cannot be null",
			`{"strategy":null}`:                 "strategy cannot be null",
			`{"strategy":{"duration_ms":null}}`: "strategy.duration_ms cannot be null",
			`{"strategy":{"type":null}}`:        "strategy.type cannot be null",
		} {
			budError(t, tb.req(t, "PATCH", "/budgets/k", body), http.StatusUnprocessableEntity, msg)
		}
		require.Equal(t, b, tb.budGet(t, "k", false))
	})

	t.Run("TypeChange", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "k", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":3}}`)

		// To while_in_flight: duration and burst go with the old strategy.
		r := tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"type":"while_in_flight"}}`)
		var p api.Budget
		r.json(t, &p)
		budExact(t, r, http.StatusOK, fmt.Sprintf(`{"key":"k","allocation":10,"strategy":{"type":"while_in_flight"},"created_at":%d,"updated_at":%d}`, p.CreatedAt, p.UpdatedAt), 0)

		// To time_based, the new strategy must be complete.
		budError(t, tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"type":"time_based"}}`), http.StatusUnprocessableEntity,
			"duration_ms is required for time_based budgets")
		budError(t, tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"type":"time_based","burst":2}}`), http.StatusUnprocessableEntity,
			"duration_ms is required for time_based budgets")
		// while_in_flight takes no duration or burst.
		budError(t, tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"duration_ms":5}}`), http.StatusUnprocessableEntity,
			"duration_ms is only valid for time_based budgets")
		budError(t, tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"burst":5}}`), http.StatusUnprocessableEntity,
			"burst is only valid for time_based budgets")
		require.Equal(t, p, tb.budGet(t, "k", false))

		r = tb.req(t, "PATCH", "/budgets/k", `{"allocation":6,"strategy":{"type":"time_based","duration_ms":60000,"burst":2}}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		r.json(t, &p)
		require.Equal(t, int64(6), p.Allocation)
		require.Equal(t, api.Strategy{Type: "time_based", DurationMs: 60000, Burst: 2}, p.Strategy)
		// A time_based pool starts full after a type change.
		require.Equal(t, 2.0, tb.budState(t, "k").Available)

		// Same type: a field-level merge, the burst stays.
		r = tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"type":"time_based","duration_ms":1000}}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		r.json(t, &p)
		require.Equal(t, api.Strategy{Type: "time_based", DurationMs: 1000, Burst: 2}, p.Strategy)
	})

	t.Run("BadBodies", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		b := tb.budPut(t, "k", budSchemaBot)
		for _, body := range []string{`{`, `[1]`, `"x"`, `{"allocation":"ten"}`, `{"strategy":{"type":"leaky"}}`, `{"strategy":[]}`, ``} {
			r := tb.req(t, "PATCH", "/budgets/k", body)
			require.Equal(t, http.StatusBadRequest, r.status, "body %q: %s", body, r.body)
			r.errorText(t)
		}
		require.Equal(t, b, tb.budGet(t, "k", false))
	})
}

func TestBudgets_Delete(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "k", budSchemaBot)
	r := tb.req(t, "DELETE", "/budgets/k", nil)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, r.body)
	budError(t, tb.req(t, "DELETE", "/budgets/k", nil), http.StatusNotFound, "budget 'k' not found")
	budError(t, tb.req(t, "GET", "/budgets/k", nil), http.StatusNotFound, "budget 'k' not found")
	// A deleted key may be created again, and enqueues no longer see it.
	r = tb.req(t, "POST", "/jobs", `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"k"}]}`)
	budError(t, r, http.StatusUnprocessableEntity, "budget 'k' does not exist")
	require.Equal(t, http.StatusCreated, tb.req(t, "POST", "/budgets/k", budSchemaBot).status)

	// Over HTTP/2 too: the same bytes, and a 204 without any body.
	r = tb.reqWith(t, tb.h2, "PUT", "/budgets/h2", budSchemaBot)
	require.Equal(t, "HTTP/2.0", r.proto)
	var b api.Budget
	r.json(t, &b)
	budExact(t, r, http.StatusOK, fmt.Sprintf(`{"key":"h2","allocation":10,"strategy":{"type":"while_in_flight"},"created_at":%d,"updated_at":%d}`, b.CreatedAt, b.CreatedAt), 0)
	r = tb.reqWith(t, tb.h2, "DELETE", "/budgets/h2", nil)
	require.Equal(t, "HTTP/2.0", r.proto)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, r.body)
	budError(t, tb.reqWith(t, tb.h2, "DELETE", "/budgets/h2", nil), http.StatusNotFound, "budget 'h2' not found")
}

// TestBudgets_DeleteReferenced counts scheduled, ready and in-flight jobs as
// unfinished, pluralises the message, and frees the budget once they finish.
func TestBudgets_DeleteReferenced(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "k", budSchemaBot)
	far := budMs() + 3600_000
	scheduled := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"q","payload":{},"ready_at":%d,"budgets":[{"key":"k"}]}`, far))
	require.Equal(t, "scheduled", scheduled.Status)
	ts := tb.take(t, "prefetch=1")
	inFlight := tb.budJob(t, "q", `[{"key":"k","cost":3}]`)
	require.Equal(t, inFlight.ID, ts.next(t, 5*time.Second).ID)

	msg := func(n string) string {
		return "budget 'k' is referenced by " + n + ". Delete them or wait for them to finish before deleting it."
	}
	budError(t, tb.req(t, "DELETE", "/budgets/k", nil), http.StatusConflict, msg("2 unfinished jobs"))
	ready := tb.budJob(t, "other", `[{"key":"k"}]`)
	budError(t, tb.req(t, "DELETE", "/budgets/k", nil), http.StatusConflict, msg("3 unfinished jobs"))

	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+inFlight.ID+"/success", nil).status)
	require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/jobs/"+ready.ID, nil).status)
	budError(t, tb.req(t, "DELETE", "/budgets/k", nil), http.StatusConflict, msg("1 unfinished job"))
	require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/jobs/"+scheduled.ID, nil).status)
	require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/budgets/k", nil).status)
}

// TestBudgets_ShrinkBelowBoundCosts checks the allocation and burst rules
// of PUT and PATCH against unfinished bound jobs: only the jobs whose cost
// exceeds the proposed value are counted.
func TestBudgets_ShrinkBelowBoundCosts(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b := tb.budPut(t, "k", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000}}`)
	for _, c := range []int{1, 3, 5} {
		tb.budJob(t, "q", fmt.Sprintf(`[{"key":"k","cost":%d}]`, c))
	}
	budError(t, tb.req(t, "PUT", "/budgets/k", `{"allocation":2,"strategy":{"type":"time_based","duration_ms":1000}}`), http.StatusUnprocessableEntity,
		"budget 'k' cannot allocate 2: 2 unfinished jobs draw up to 5 from it. Raise the allocation, delete them, or wait for them to drain.")
	budError(t, tb.req(t, "PATCH", "/budgets/k", `{"allocation":4}`), http.StatusUnprocessableEntity,
		"budget 'k' cannot allocate 4: 1 unfinished job draw up to 5 from it. Raise the allocation, delete them, or wait for them to drain.")
	budError(t, tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"burst":2}}`), http.StatusUnprocessableEntity,
		"budget 'k' cannot burst 2: 2 unfinished jobs draw up to 5 from it. Raise the burst, delete them, or wait for them to drain.")
	budError(t, tb.req(t, "PUT", "/budgets/k", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":4}}`), http.StatusUnprocessableEntity,
		"budget 'k' cannot burst 4: 1 unfinished job draw up to 5 from it. Raise the burst, delete them, or wait for them to drain.")
	require.Equal(t, b, tb.budGet(t, "k", false), "refused changes leave the budget alone")

	// Exactly the largest cost is fine.
	r := tb.req(t, "PATCH", "/budgets/k", `{"allocation":5,"strategy":{"burst":5}}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	// Lowering below current usage is allowed (only per-job costs count).
	r = tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"type":"while_in_flight"}}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
}

// TestBudgets_Rules checks the 422 value rules and the 400 decode errors of
// POST and PUT.
func TestBudgets_Rules(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	unprocessable := []struct{ body, msg string }{
		{`{"allocation":0,"strategy":{"type":"while_in_flight"}}`, "allocation must be at least 1"},
		{`{"allocation":-5,"strategy":{"type":"while_in_flight"}}`, "allocation must be at least 1"},
		{`{"allocation":2147483648,"strategy":{"type":"while_in_flight"}}`, "allocation must be at most 2147483647"},
		{`{"allocation":1,"strategy":{"type":"time_based","duration_ms":0}}`, "duration_ms must be at least 1"},
		{`{"allocation":1,"strategy":{"type":"time_based","duration_ms":10,"burst":0}}`, "burst must be at least 1"},
		{`{"allocation":1,"strategy":{"type":"while_in_flight","burst":2}}`, "burst is only valid for time_based budgets"},
		{`{"allocation":1,"strategy":{"type":"while_in_flight","duration_ms":1000}}`, "duration_ms is only valid for time_based budgets"},
	}
	for _, tc := range unprocessable {
		for _, m := range []string{"POST", "PUT"} {
			budError(t, tb.req(t, m, "/budgets/k", tc.body), http.StatusUnprocessableEntity, tc.msg)
		}
	}

	keys := []struct{ path, msg string }{
		{"a,b", "budget key must not contain ','"},
		{"a%2Cb", "budget key must not contain ','"},
		{"a*b", "budget key must not contain '*' (reserved)"},
		{"a%3Fb", "budget key must not contain '?' (reserved)"},
		{"a%5Bb", "budget key must not contain '[' (reserved)"},
		{"a%7Bb", "budget key must not contain '{' (reserved)"},
		{"a%5Cb", "budget key must not contain '\\' (reserved)"},
		{"a%00b", "budget key must not contain null bytes"},
	}
	for _, k := range keys {
		for _, m := range []string{"POST", "PUT"} {
			budError(t, tb.req(t, m, "/budgets/"+k.path, budSchemaBot), http.StatusUnprocessableEntity, k.msg)
		}
	}

	bad := []struct{ body, msg string }{
		{`{`, ""},
		{``, "invalid JSON: empty body"},
		{`{"allocation":"ten","strategy":{"type":"while_in_flight"}}`, ""},
		{`{"allocation":1.5,"strategy":{"type":"while_in_flight"}}`, ""},
		{`{"strategy":{"type":"while_in_flight"}}`, "invalid JSON: missing field `allocation`"},
		{`{"allocation":1}`, "invalid JSON: missing field `strategy`"},
		{`{"allocation":1,"strategy":{}}`, "invalid JSON: missing field `type`"},
		{`{"allocation":1,"strategy":{"type":"time_based"}}`, "invalid JSON: missing field `duration_ms`"},
		{`{"allocation":1,"strategy":{"type":"fixed_window"}}`, "invalid JSON: unknown variant `fixed_window`, expected `while_in_flight`, `time_based` or `calendar`"},
	}
	for _, tc := range bad {
		for _, m := range []string{"POST", "PUT"} {
			r := tb.req(t, m, "/budgets/k", tc.body)
			require.Equal(t, http.StatusBadRequest, r.status, "%s %q: %s", m, tc.body, r.body)
			if tc.msg != "" {
				budError(t, r, http.StatusBadRequest, tc.msg)
			} else {
				require.True(t, strings.HasPrefix(r.errorText(t), "invalid JSON: "), "body: %s", r.body)
			}
		}
	}
	budExact(t, tb.req(t, "GET", "/budgets", nil), http.StatusOK, `{"budgets":[]}`, 0)
}

// TestBudgets_MaxBudgets runs a server with --max-budgets 2.
func TestBudgets_MaxBudgets(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *server.Options) { o.Engine.MaxBudgets = 2 })
	tb.budPut(t, "a", budSchemaBot)
	require.Equal(t, http.StatusCreated, tb.req(t, "POST", "/budgets/b", budSchemaBot).status)

	limit := func(k string) string { return "cannot create budget '" + k + "': limit of 2 budgets reached" }
	budError(t, tb.req(t, "POST", "/budgets/c", budSchemaBot), http.StatusUnprocessableEntity, limit("c"))
	budError(t, tb.req(t, "PUT", "/budgets/c", budSchemaBot), http.StatusUnprocessableEntity, limit("c"))
	// Replacing or patching an existing budget is no creation.
	tb.budPut(t, "a", `{"allocation":3,"strategy":{"type":"while_in_flight"}}`)
	require.Equal(t, http.StatusOK, tb.req(t, "PATCH", "/budgets/b", `{"allocation":4}`).status)

	cw := `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"c","create_with":` + budSchemaBot + `}]}`
	budError(t, tb.req(t, "POST", "/jobs", cw), http.StatusUnprocessableEntity, limit("c"))
	budError(t, tb.req(t, "POST", "/jobs/bulk", `{"jobs":[{"type":"t","queue":"q","payload":{}},`+cw+`]}`), http.StatusUnprocessableEntity, "jobs[1]: "+limit("c"))
	// create_with of an existing key needs no slot.
	tb.enqueue(t, `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"a","create_with":`+budSchemaBot+`}]}`)
	require.Equal(t, int64(1), tb.budCount(t, ""))

	// Deleting frees a slot.
	require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/budgets/b", nil).status)
	j := tb.enqueue(t, cw)
	require.Equal(t, []api.Binding{{Key: "c", Cost: 1}}, j.Budgets)
	budError(t, tb.req(t, "POST", "/budgets/d", budSchemaBot), http.StatusUnprocessableEntity, limit("d"))
}

// TestBudgets_EnqueueCost checks the cost rules of enqueue: a job may never
// cost more than its budget allows, and a bulk request is all-or-nothing.
func TestBudgets_EnqueueCost(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "wif", `{"allocation":10,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "tb", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":2}}`)
	tb.budPut(t, "big", `{"allocation":2,"strategy":{"type":"time_based","duration_ms":1000,"burst":9}}`)

	one := func(b string) string { return `{"type":"t","queue":"q","payload":{},"budgets":` + b + `}` }
	budError(t, tb.req(t, "POST", "/jobs", one(`[{"key":"wif","cost":11}]`)), http.StatusUnprocessableEntity, "job cost 11 exceeds budget 'wif' allocation 10")
	budError(t, tb.req(t, "POST", "/jobs", one(`[{"key":"tb","cost":3}]`)), http.StatusUnprocessableEntity, "job cost 3 exceeds budget 'tb' burst 2")
	// With burst above the allocation the allocation still bounds the cost.
	budError(t, tb.req(t, "POST", "/jobs", one(`[{"key":"big","cost":3}]`)), http.StatusUnprocessableEntity, "job cost 3 exceeds budget 'big' allocation 2")
	budError(t, tb.req(t, "POST", "/jobs", one(`[{"key":"nope"}]`)), http.StatusUnprocessableEntity, "budget 'nope' does not exist")

	// 400s: the request alone is wrong, whatever the server holds.
	budError(t, tb.req(t, "POST", "/jobs", one(`[{"key":"wif","cost":0}]`)), http.StatusBadRequest, "cost must be at least 1")
	budError(t, tb.req(t, "POST", "/jobs", one(`[{"key":"wif"},{"key":"wif","cost":2}]`)), http.StatusBadRequest, "budget 'wif' is bound more than once")
	budError(t, tb.req(t, "POST", "/jobs", one(`[{"key":"a*"}]`)), http.StatusBadRequest, "budget key must not contain '*' (reserved)")
	budError(t, tb.req(t, "POST", "/jobs", one(`[{"cost":1}]`)), http.StatusBadRequest, "invalid JSON: missing field `key`")
	budError(t, tb.req(t, "POST", "/jobs", one(`[{"key":"wif","create_with":{"allocation":0,"strategy":{"type":"while_in_flight"}}}]`)), http.StatusBadRequest,
		"create_with: allocation must be at least 1")

	bulk := `{"jobs":[` + one(`[{"key":"wif","cost":10}]`) + `,` + one(`[{"key":"tb","cost":2},{"key":"wif","cost":12}]`) + `]}`
	budError(t, tb.req(t, "POST", "/jobs/bulk", bulk), http.StatusUnprocessableEntity, "jobs[1]: job cost 12 exceeds budget 'wif' allocation 10")
	bulk = `{"jobs":[` + one(`[{"key":"wif"}]`) + `,` + one(`[{"key":"wif","cost":0}]`) + `]}`
	budError(t, tb.req(t, "POST", "/jobs/bulk", bulk), http.StatusBadRequest, "jobs[1]: cost must be at least 1")
	require.Zero(t, tb.budCount(t, ""), "nothing stored")

	// Exactly at the limits is fine; costs are echoed in input order.
	j := tb.enqueue(t, one(`[{"key":"tb","cost":2},{"key":"wif","cost":10},{"key":"big"}]`))
	require.Equal(t, []api.Binding{{Key: "tb", Cost: 2}, {Key: "wif", Cost: 10}, {Key: "big", Cost: 1}}, j.Budgets)
	// An empty list is no binding at all.
	r := tb.req(t, "POST", "/jobs", one(`[]`))
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.NotContains(t, string(r.body), "budgets")
}

// TestBudgets_BulkCreateWith checks that create_with in a bulk request is
// all-or-nothing and that the first create_with of a key wins.
func TestBudgets_BulkCreateWith(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	item := func(b string) string { return `{"type":"t","queue":"q","payload":{},"budgets":` + b + `}` }
	cw := func(alloc int) string {
		return fmt.Sprintf(`"create_with":{"allocation":%d,"strategy":{"type":"while_in_flight"}}`, alloc)
	}

	// The second item costs more than the budget the first would create:
	// nothing is stored, the budget included.
	bulk := `{"jobs":[` + item(`[{"key":"n",`+cw(5)+`}]`) + `,` + item(`[{"key":"n","cost":6}]`) + `]}`
	budError(t, tb.req(t, "POST", "/jobs/bulk", bulk), http.StatusUnprocessableEntity, "jobs[1]: job cost 6 exceeds budget 'n' allocation 5")
	budError(t, tb.req(t, "GET", "/budgets/n", nil), http.StatusNotFound, "budget 'n' not found")
	// A later item's own (ignored) create_with does not rescue it.
	bulk = `{"jobs":[` + item(`[{"key":"n",`+cw(5)+`}]`) + `,` + item(`[{"key":"n","cost":6,`+cw(50)+`}]`) + `]}`
	budError(t, tb.req(t, "POST", "/jobs/bulk", bulk), http.StatusUnprocessableEntity, "jobs[1]: job cost 6 exceeds budget 'n' allocation 5")
	// A missing budget without create_with fails the whole request.
	bulk = `{"jobs":[` + item(`[{"key":"n",`+cw(5)+`}]`) + `,` + item(`[{"key":"m"}]`) + `]}`
	budError(t, tb.req(t, "POST", "/jobs/bulk", bulk), http.StatusUnprocessableEntity, "jobs[1]: budget 'm' does not exist")
	budExact(t, tb.req(t, "GET", "/budgets", nil), http.StatusOK, `{"budgets":[]}`, 0)
	require.Zero(t, tb.budCount(t, ""))

	// Success: the first create_with creates, later items validate against it.
	bulk = `{"jobs":[` + item(`[{"key":"n",`+cw(5)+`}]`) + `,` + item(`[{"key":"n","cost":5}]`) + `,` + item(`[{"key":"n","cost":2,`+cw(50)+`}]`) + `]}`
	r := tb.req(t, "POST", "/jobs/bulk", bulk)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	n := tb.budGet(t, "n", false)
	require.Equal(t, int64(5), n.Allocation)
	require.Equal(t, int64(3), tb.budCount(t, "budgets.key=n"))
}

// TestBudgets_MsgPack exchanges budgets in MessagePack both ways.
func TestBudgets_MsgPack(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	mp := []string{"Content-Type", "application/msgpack", "Accept", "application/msgpack"}
	body, err := msgpack.Marshal(map[string]any{"allocation": 7, "strategy": map[string]any{"type": "time_based", "duration_ms": 60000, "burst": 3}})
	require.NoError(t, err)

	r := tb.req(t, "POST", "/budgets/mp", body, mp...)
	require.Equal(t, http.StatusCreated, r.status, "body: %q", r.body)
	require.Equal(t, "application/msgpack", r.header.Get("Content-Type"))
	var raw map[string]any
	require.NoError(t, msgpack.Unmarshal(r.body, &raw))
	require.Len(t, raw, 5, "exactly key, allocation, strategy, created_at, updated_at: %v", raw)
	var b api.Budget
	require.NoError(t, api.Unmarshal(api.MsgPack, r.body, &b))
	require.Equal(t, "mp", b.Key)
	require.Equal(t, int64(7), b.Allocation)
	require.Equal(t, api.Strategy{Type: "time_based", DurationMs: 60000, Burst: 3}, b.Strategy)
	require.Equal(t, b.CreatedAt, b.UpdatedAt)
	require.Nil(t, b.State)

	// MessagePack in, JSON out: the same budget.
	r = tb.req(t, "PUT", "/budgets/mp2", body, "Content-Type", "application/msgpack")
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	budExact(t, r, http.StatusOK, fmt.Sprintf(`{"key":"mp2","allocation":7,"strategy":{"type":"time_based","duration_ms":60000,"burst":3},"created_at":%d,"updated_at":%d}`,
		budDecodeCreated(t, r), budDecodeCreated(t, r)), 0)

	// JSON in, MessagePack out; GET and list in MessagePack.
	r = tb.req(t, "PUT", "/budgets/mp3", budSchemaBot, "Accept", "application/msgpack")
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "application/msgpack", r.header.Get("Content-Type"))
	var w api.Budget
	require.NoError(t, api.Unmarshal(api.MsgPack, r.body, &w))
	require.Equal(t, api.Strategy{Type: "while_in_flight"}, w.Strategy)

	r = tb.req(t, "GET", "/budgets/mp", nil, "Accept", "application/msgpack")
	require.Equal(t, http.StatusOK, r.status)
	var got api.Budget
	require.NoError(t, api.Unmarshal(api.MsgPack, r.body, &got))
	require.Equal(t, b, got)

	r = tb.req(t, "GET", "/budgets", nil, "Accept", "application/msgpack")
	require.Equal(t, http.StatusOK, r.status)
	var list api.BudgetList
	require.NoError(t, api.Unmarshal(api.MsgPack, r.body, &list))
	require.Len(t, list.Budgets, 3)
	require.Equal(t, []string{"mp", "mp2", "mp3"}, []string{list.Budgets[0].Key, list.Budgets[1].Key, list.Budgets[2].Key})
	require.Equal(t, b, list.Budgets[0])

	// PATCH and errors in MessagePack too.
	patch, err := msgpack.Marshal(map[string]any{"strategy": map[string]any{"burst": nil}})
	require.NoError(t, err)
	r = tb.req(t, "PATCH", "/budgets/mp", patch, mp...)
	require.Equal(t, http.StatusOK, r.status, "body: %q", r.body)
	got = api.Budget{}
	require.NoError(t, api.Unmarshal(api.MsgPack, r.body, &got))
	require.Equal(t, api.Strategy{Type: "time_based", DurationMs: 60000}, got.Strategy)

	r = tb.req(t, "POST", "/budgets/mp", body, mp...)
	require.Equal(t, http.StatusConflict, r.status)
	var e api.Error
	require.NoError(t, api.Unmarshal(api.MsgPack, r.body, &e))
	require.Equal(t, "budget 'mp' already exists", e.Error)

	noAlloc, err := msgpack.Marshal(map[string]any{"strategy": map[string]any{"type": "while_in_flight"}})
	require.NoError(t, err)
	r = tb.req(t, "POST", "/budgets/x", noAlloc, "Content-Type", "application/msgpack")
	budError(t, r, http.StatusBadRequest, "invalid MessagePack: missing field `allocation`")
}

func budDecodeCreated(t *testing.T, r reply) uint64 {
	t.Helper()
	var b api.Budget
	r.json(t, &b)
	return b.CreatedAt
}

// TestBudgets_State checks ?state=true: it adds "state", and the default
// responses stay without it.
func TestBudgets_State(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	wif := tb.budPut(t, "wif", `{"allocation":3,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "tb", `{"allocation":2,"strategy":{"type":"time_based","duration_ms":3600000,"burst":4}}`)

	// Default responses: exactly the budget object, no state.
	plain := fmt.Sprintf(`{"key":"wif","allocation":3,"strategy":{"type":"while_in_flight"},"created_at":%d,"updated_at":%d}`, wif.CreatedAt, wif.UpdatedAt)
	budExact(t, tb.req(t, "GET", "/budgets/wif", nil), http.StatusOK, plain, 0)
	budExact(t, tb.req(t, "GET", "/budgets/wif?state=false", nil), http.StatusOK, plain, 0)
	require.NotContains(t, string(tb.req(t, "GET", "/budgets", nil).body), "state")

	withState := fmt.Sprintf(`{"key":"wif","allocation":3,"strategy":{"type":"while_in_flight"},"created_at":%d,"updated_at":%d,`+
		`"state":{"available":3,"capacity":3,"in_flight":0,"held":0,"parked":0,"oldest_parked_ms":null,"next_token_at":null,"dispatched":0}}`, wif.CreatedAt, wif.UpdatedAt)
	budExact(t, tb.req(t, "GET", "/budgets/wif?state=true", nil), http.StatusOK, withState, 0)
	budExact(t, tb.req(t, "GET", "/budgets/wif?state=1", nil), http.StatusOK, withState, 0)
	budError(t, tb.req(t, "GET", "/budgets/wif?state=yes", nil), http.StatusBadRequest, `invalid query parameters: state must be true or false, not "yes"`)

	var list api.BudgetList
	tb.req(t, "GET", "/budgets?state=true", nil).json(t, &list)
	require.Len(t, list.Budgets, 2)
	require.Equal(t, "tb", list.Budgets[0].Key)
	require.Equal(t, api.BudgetState{Available: 4, Capacity: 4}, *list.Budgets[0].State, "a time_based pool starts full, at its burst")
	require.Equal(t, api.BudgetState{Available: 3, Capacity: 3}, *list.Budgets[1].State)

	// One worker takes a job of "wif" and two of "tb": 1 token is left in "tb", so
	// the next two jobs on it park (the cost-1 job behind the cost-2 head,
	// which reserves the budget).
	ts := tb.take(t, "prefetch=0")
	a := tb.budJob(t, "q", `[{"key":"wif","cost":2}]`)
	t0 := budMs()
	b := tb.budJob(t, "q", `[{"key":"tb","cost":2}]`)
	b2 := tb.budJob(t, "q", `[{"key":"tb","cost":1}]`)
	require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
	require.Equal(t, b.ID, ts.next(t, 5*time.Second).ID)
	require.Equal(t, b2.ID, ts.next(t, 5*time.Second).ID)
	before := budMs()
	c := tb.budJob(t, "q", `[{"key":"tb","cost":2}]`)
	tb.budJob(t, "q", `[{"key":"tb","cost":1}]`)
	ts.none(t, 100*time.Millisecond)

	st := tb.budState(t, "wif")
	require.Equal(t, api.BudgetState{Available: 1, Capacity: 3, InFlight: 1, Held: 2, Dispatched: 1}, st)

	st = tb.budState(t, "tb")
	require.Equal(t, int64(4), st.Capacity)
	require.Equal(t, int64(2), st.InFlight)
	require.Zero(t, st.Held, "time_based budgets hold nothing")
	require.Equal(t, int64(2), st.Parked)
	require.Equal(t, int64(2), st.Dispatched)
	require.InDelta(t, 1.0, st.Available, 0.01, "4 − 3, plus a refill of 2 tokens per hour")
	require.NotNil(t, st.OldestParkedMs)
	require.LessOrEqual(t, *st.OldestParkedMs, budMs()-before)
	// The head (cost 2) needs one more token: 30 minutes at 2 per hour,
	// counted from the first debit, made between t0 and before.
	require.NotNil(t, st.NextTokenAt)
	require.GreaterOrEqual(t, *st.NextTokenAt, t0+1800_000)
	require.LessOrEqual(t, *st.NextTokenAt, before+1800_000+1)

	why := tb.budWhy(t, c.ID)
	require.Equal(t, "budget", why.WaitingFor)
	require.Len(t, why.Budgets, 1)
	require.Equal(t, "tb", why.Budgets[0].Key)
	require.Equal(t, int64(2), why.Budgets[0].Cost)
	require.Zero(t, why.Budgets[0].Ahead)
}

// TestBudgets_Why checks GET /jobs/{id}/why for each kind of job.
func TestBudgets_Why(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "wif", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "rate", `{"allocation":1,"strategy":{"type":"time_based","duration_ms":3600000}}`)

	// No worker yet: a job waits for one, in no line.
	first := tb.budJob(t, "q", `[{"key":"wif"}]`)
	w := tb.budWhy(t, first.ID)
	require.Equal(t, api.Why{ID: first.ID, Status: "ready", WaitingFor: "worker", Reason: "no worker serves queue q", Budgets: []api.WhyBudget{}, ReadyAt: first.ReadyAt}, w)
	// A worker holds it: the next one in the same budget is parked…
	ts := tb.take(t, "prefetch=1&queue=q")
	require.Equal(t, first.ID, ts.next(t, 5*time.Second).ID)
	w = tb.budWhy(t, first.ID)
	require.Equal(t, "in_flight", w.Status)
	require.Equal(t, "nothing", w.WaitingFor)
	second := tb.budJob(t, "q", `[{"key":"wif"}]`)
	third := tb.budJob(t, "q", `[{"key":"wif"},{"key":"rate"}]`)
	w = tb.budWhy(t, second.ID)
	require.Equal(t, "ready", w.Status, "parked jobs keep the ready status")
	require.Equal(t, "budget", w.WaitingFor)
	require.Equal(t, []api.WhyBudget{{Key: "wif", Cost: 1, Available: 0, Ahead: 0, AffordableAt: nil}}, w.Budgets)
	// …and the one behind it waits in wif's line only, though rate could
	// pay it (a job a while_in_flight budget refuses is in no time_based
	// line).
	w = tb.budWhy(t, third.ID)
	require.Equal(t, "budget", w.WaitingFor)
	require.Equal(t, []api.WhyBudget{{Key: "wif", Cost: 1, Available: 0, Ahead: 1, AffordableAt: nil}}, w.Budgets)

	far := budMs() + 3600_000
	sched := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"q","payload":{},"ready_at":%d,"budgets":[{"key":"wif"}]}`, far))
	w = tb.budWhy(t, sched.ID)
	require.Equal(t, api.Why{ID: sched.ID, Status: "scheduled", WaitingFor: "schedule", Budgets: []api.WhyBudget{}, ReadyAt: uint64(far)}, w)

	ts = tb.take(t, "prefetch=0&queue=other")
	// Completed and retained: finished.
	kept := tb.enqueue(t, `{"type":"t","queue":"other","payload":{},"retention":{"completed_ms":600000}}`)
	require.Equal(t, kept.ID, ts.next(t, 5*time.Second).ID)
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+kept.ID+"/success", nil).status)
	w = tb.budWhy(t, kept.ID)
	require.Equal(t, api.Why{ID: kept.ID, Status: "completed", WaitingFor: "finished", Budgets: []api.WhyBudget{}, ReadyAt: kept.ReadyAt}, w)

	budError(t, tb.req(t, "GET", "/jobs/"+strings.Repeat("0", 25)+"/why", nil), http.StatusNotFound, "job not found")
	// A completed job that was not retained is gone.
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+first.ID+"/success", nil).status)
	budError(t, tb.req(t, "GET", "/jobs/"+first.ID+"/why", nil), http.StatusNotFound, "job not found")
}

// TestBudgets_Stats checks the counts of GET /stats with parked jobs.
func TestBudgets_Stats(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "wif", `{"allocation":2,"strategy":{"type":"while_in_flight"}}`)
	tb.budJobs(t, 5, "a", `[{"key":"wif"}]`)
	tb.budJobs(t, 3, "b", "")
	tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"b","payload":{},"ready_at":%d}`, budMs()+3600_000))

	s := tb.budStats(t)
	require.Equal(t, api.JobCounts{Scheduled: 1, Ready: 8}, s.Jobs, "with no worker nothing is parked")
	require.Equal(t, []api.QueueStats{
		{Name: "a", Ready: 5},
		{Name: "b", Scheduled: 1, Ready: 3},
	}, s.Queues)
	require.Len(t, s.Budgets, 1)
	require.Equal(t, "wif", s.Budgets[0].Key)
	require.NotNil(t, s.Budgets[0].State)
	require.Zero(t, s.Budgets[0].State.Parked)
	require.Equal(t, server.Version, s.Version)

	ts := tb.take(t, "prefetch=0&queue=a")
	ts.next(t, 5*time.Second)
	ts.next(t, 5*time.Second)
	ts.none(t, 100*time.Millisecond)
	s = tb.budStats(t)
	require.Equal(t, api.JobCounts{Scheduled: 1, Ready: 3, Parked: 3, InFlight: 2}, s.Jobs)
	require.Equal(t, api.QueueStats{Name: "a", Parked: 3, InFlight: 2}, s.Queues[0])
	require.Equal(t, int64(2), s.Budgets[0].State.Held)
}
