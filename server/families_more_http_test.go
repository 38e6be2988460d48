package server_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// famMoreFamily is a family of while_in_flight sub-budgets of one token.
const famMoreFamily = `{"allocation":10,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"while_in_flight"}}}`

// TestFamilies_KeyNotUTF8: every budget key of a path or a query string
// that is not UTF-8 after percent-decoding is refused with 400, a
// sub-budget's key of a family included (it was answered as an idle
// sub-budget whose key came back as U+FFFD), and nothing changes.
func TestFamilies_KeyNotUTF8(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		b.call(t, "PUT", "/budgets/fam", famMoreFamily, http.StatusOK, nil)
		job := b.famJob(t, "nobody", `[{"key":"fam/a"}]`)
		const pathMsg = "invalid path: budget key must be valid UTF-8"
		binding := `{"cost":1}`
		for _, key := range []string{"fam%2F%FF", "%FF", "a%C3"} {
			for _, c := range []struct{ method, path, body, msg string }{
				{"GET", "/budgets/" + key, "", pathMsg},
				{"GET", "/budgets/" + key + "?state=true", "", pathMsg},
				{"PUT", "/budgets/" + key, famPlain, pathMsg},
				{"POST", "/budgets/" + key, famPlain, pathMsg},
				{"PATCH", "/budgets/" + key, `{"paused":true}`, pathMsg},
				{"DELETE", "/budgets/" + key, "", pathMsg},
				{"GET", "/budgets/" + key + "/forecast", "", pathMsg},
				{"POST", "/jobs/" + job.ID + "/budgets/" + key, "", pathMsg},
				{"PUT", "/jobs/" + job.ID + "/budgets/" + key, "", pathMsg},
				{"PATCH", "/jobs/" + job.ID + "/budgets/" + key, binding, pathMsg},
				{"DELETE", "/jobs/" + job.ID + "/budgets/" + key, "", pathMsg},
				{"POST", "/jobs/budgets/" + key, "", pathMsg},
				{"DELETE", "/jobs/budgets/" + key + "?queue=nobody", "", pathMsg},
				{"GET", "/budgets?parent=" + key, "", "invalid query parameters: parent must be valid UTF-8"},
				{"GET", "/jobs?budgets.key=" + key, "", "invalid query parameters: budgets.key must be valid UTF-8"},
				{"GET", "/jobs/count?budgets.key=ok," + key, "", "invalid query parameters: budgets.key must be valid UTF-8"},
				{"DELETE", "/jobs?budgets.key=" + key, "", "invalid query parameters: budgets.key must be valid UTF-8"},
			} {
				before := b.snapshot(t, "/jobs/"+job.ID)
				b.fails(t, c.method, c.path, c.body, http.StatusBadRequest, c.msg)
				require.Equal(t, before, b.snapshot(t, "/jobs/"+job.ID), "%s %s changed something", c.method, c.path)
			}
		}
	})
}

// TestFamilies_PauseEndInThePast: a paused_until that has already come is
// refused with 422 by every request that sets one (PUT, POST, PATCH; the
// CLI's pause is a PATCH), and an existing pause stays as it was: it was
// taken and lifted at once.
func TestFamilies_PauseEndInThePast(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		until := famT0 + 60_000
		b.call(t, "PUT", "/budgets/api", fmt.Sprintf(`{"allocation":3,"strategy":{"type":"while_in_flight"},"paused_until":%d}`, until), http.StatusOK, nil)
		b.call(t, "PUT", "/budgets/held", `{"allocation":3,"strategy":{"type":"while_in_flight"},"paused":true}`, http.StatusOK, nil)
		b.clk.Advance(time.Second)
		now := famT0 + 1000
		msg := func(at int64) string {
			return fmt.Sprintf("paused_until must be in the future: %d (%s) has passed, it is 2026-05-01T12:00:01Z now",
				at, time.UnixMilli(at).UTC().Format(time.RFC3339Nano))
		}
		wif := func(pause string) string {
			return `{"allocation":3,"strategy":{"type":"while_in_flight"},` + pause + `}`
		}
		for _, c := range []struct{ method, path, body string }{
			{"PATCH", "/budgets/api", fmt.Sprintf(`{"paused_until":%d}`, now)},
			{"PATCH", "/budgets/api", fmt.Sprintf(`{"paused":true,"paused_until":%d}`, now-1)},
			{"PATCH", "/budgets/held", fmt.Sprintf(`{"paused_until":%d}`, 1)},
			{"PATCH", "/budgets/held", fmt.Sprintf(`{"allocation":4,"paused_until":%d}`, now-500)},
			{"PUT", "/budgets/api", wif(fmt.Sprintf(`"paused_until":%d`, now))},
			{"PUT", "/budgets/held", wif(fmt.Sprintf(`"paused":true,"paused_until":%d`, famT0))},
			{"PUT", "/budgets/new", wif(fmt.Sprintf(`"paused_until":%d`, now-1))},
			{"POST", "/budgets/new", wif(fmt.Sprintf(`"paused":true,"paused_until":%d`, 5))},
		} {
			var at int64
			_, err := fmt.Sscanf(c.body[strings.Index(c.body, `"paused_until":`)+len(`"paused_until":`):], "%d", &at)
			require.NoError(t, err)
			before := b.snapshot(t, "/budgets/api")
			b.fails(t, c.method, c.path, c.body, http.StatusUnprocessableEntity, msg(at))
			require.Equal(t, before, b.snapshot(t, "/budgets/api"), "%s %s changed something", c.method, c.path)
		}
		require.Equal(t, uint64(until), b.budget(t, "/budgets/api").PausedUntil, "the pause stands")
		require.True(t, b.budget(t, "/budgets/held").Paused, "the pause stands")
		// An end still to come is taken, to the millisecond.
		b.call(t, "PATCH", "/budgets/held", fmt.Sprintf(`{"paused_until":%d}`, now+1), http.StatusOK, nil)
	})
}

// TestFamilies_SubKeyRefused: a family key with an empty sub-key or a '/'
// inside it is refused with 422 wherever a job is bound to it (enqueue,
// bulk, a binding's change) and wherever it is read as a sub-budget; a
// valid sub-key beside it works.
func TestFamilies_SubKeyRefused(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		b.call(t, "PUT", "/budgets/tenants", famMoreFamily, http.StatusOK, nil)
		b.famJob(t, "nobody", `[{"key":"tenants/ok"}]`)
		job := b.famJob(t, "nobody", `[]`)
		for _, c := range []struct{ key, path, msg string }{
			{"tenants/", "tenants%2F", "budget key 'tenants/' has an empty sub-key: a key of family 'tenants' is 'tenants/<sub-key>'"},
			{"tenants//x", "tenants%2F%2Fx", "budget key 'tenants//x': the sub-key '/x' of family 'tenants' must not contain '/'"},
			{"tenants/a/b", "tenants%2Fa%2Fb", "budget key 'tenants/a/b': the sub-key 'a/b' of family 'tenants' must not contain '/'"},
		} {
			one := `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"` + c.key + `"}]}`
			for _, r := range []struct{ method, path, body, msg string }{
				{"POST", "/jobs", one, c.msg},
				{"POST", "/jobs/bulk", `{"jobs":[{"type":"t","queue":"q","payload":{}},` + one + `]}`, "jobs[1]: " + c.msg},
				{"POST", "/jobs/" + job.ID + "/budgets/" + c.path, "", c.msg},
				{"PUT", "/jobs/" + job.ID + "/budgets", `{"budgets":[{"key":"` + c.key + `"}]}`, c.msg},
				{"POST", "/jobs/budgets/" + c.path + "?queue=nobody", "", c.msg},
				{"GET", "/budgets/" + c.path, "", c.msg},
				{"GET", "/budgets/" + c.path + "/forecast", "", c.msg},
			} {
				before := b.snapshot(t, "/jobs/"+job.ID)
				b.failsLike(t, r.method, r.path, r.body, http.StatusUnprocessableEntity, "^"+regexp.QuoteMeta(r.msg)+"$")
				require.Equal(t, before, b.snapshot(t, "/jobs/"+job.ID), "%s %s changed something", r.method, r.path)
			}
		}
		var list api.BudgetList
		b.call(t, "GET", "/budgets?parent=tenants", "", http.StatusOK, &list)
		require.Equal(t, []string{"tenants/ok"}, famKeys(list.Budgets))
	})
}

// TestFamilies_FilterByFamilyKey: a family's key in budgets.key finds the
// jobs bound through its sub-budgets as well as those bound to it, and
// not those of a plain budget under its name; in every request that
// filters by budget (list, count, delete, patch, /jobs/budgets/{key}),
// agreeing with the count a refused delete of the family names.
func TestFamilies_FilterByFamilyKey(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		b.call(t, "PUT", "/budgets/tenants%2Feu", famPlain, http.StatusOK, nil) // before the family: plain
		b.call(t, "PUT", "/budgets/tenants", famMoreFamily, http.StatusOK, nil)
		b.call(t, "PUT", "/budgets/other", famPlain, http.StatusOK, nil)
		var mine []string
		for _, j := range b.famJobs(t, 3, "q", `[{"key":"tenants/acme"}]`) {
			mine = append(mine, j.ID)
		}
		mine = append(mine, b.famJob(t, "q", `[{"key":"other"},{"key":"tenants/zeta"}]`).ID)
		mine = append(mine, b.famJob(t, "q", `[{"key":"tenants"}]`).ID)
		b.famJob(t, "q", `[{"key":"tenants/eu"}]`)
		b.famJob(t, "q", `[{"key":"other"}]`)

		count := func(query string) int64 {
			t.Helper()
			var c api.Count
			b.call(t, "GET", "/jobs/count?"+query, "", http.StatusOK, &c)
			return c.Count
		}
		require.Equal(t, int64(5), count("budgets.key=tenants"))
		require.Equal(t, int64(3), count("budgets.key=tenants%2Facme"), "a sub-budget's key finds its own")
		require.Equal(t, int64(1), count("budgets.key=tenants%2Feu"))
		require.Equal(t, int64(6), count("budgets.key=tenants,tenants%2Feu"))
		var list api.JobList
		b.call(t, "GET", "/jobs?budgets.key=tenants", "", http.StatusOK, &list)
		var got []string
		for _, j := range list.Jobs {
			got = append(got, j.ID)
		}
		require.ElementsMatch(t, mine, got)
		b.failsLike(t, "DELETE", "/budgets/tenants", "", http.StatusConflict, `^budget 'tenants' is referenced by 5 unfinished jobs\.`)

		var patched api.Patched
		b.call(t, "PATCH", "/jobs?budgets.key=tenants", `{"priority":7}`, http.StatusOK, &patched)
		require.Equal(t, int64(5), patched.Patched)
		require.Equal(t, int64(5), count("budgets.key=tenants&priority=7"))
		var changed api.BindingChange
		b.call(t, "PUT", "/jobs/budgets/other?budgets.key=tenants", `{"cost":2}`, http.StatusOK, &changed)
		require.Equal(t, int64(5), changed.Changed)
		b.call(t, "DELETE", "/jobs/budgets/other?budgets.key=tenants", "", http.StatusOK, &changed)
		require.Equal(t, int64(5), changed.Changed)
		require.Equal(t, int64(1), count("budgets.key=other"), "only the job outside the family is left bound to other")

		var deleted api.Deleted
		b.call(t, "DELETE", "/jobs?budgets.key=tenants", "", http.StatusOK, &deleted)
		require.Equal(t, int64(5), deleted.Deleted)
		require.Equal(t, int64(0), count("budgets.key=tenants"))
		require.Equal(t, int64(1), count("budgets.key=tenants%2Feu"), "the plain budget's job stays")
		b.call(t, "DELETE", "/budgets/tenants", "", http.StatusNoContent, nil)
	})
}

// TestFamilies_SubBudgetPause: one tenant of a family is paused on its
// own (PATCH of the sub-budget, with or without an end); only its jobs
// wait; its pause shows in the family's list, idle or not, survives a
// change of the template, a PUT of the family and a restart, and ends by
// itself or by a resume. Anything but the pause stays the family's.
func TestFamilies_SubBudgetPause(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		b.call(t, "PUT", "/budgets/tenants", famMoreFamily, http.StatusOK, nil)
		acme := b.famJobs(t, 2, "q", `[{"key":"tenants/acme"}]`)
		zeta := b.famJob(t, "q", `[{"key":"tenants/zeta"}]`)
		stamps := famStamps(famT0, famT0)
		b.exact(t, "PATCH", "/budgets/tenants%2Facme", `{"paused":true}`, http.StatusOK,
			`{"key":"tenants/acme","allocation":1,"strategy":{"type":"while_in_flight"},"paused":true,`+stamps+`}`)
		until := famT0 + 60_000
		b.exact(t, "PATCH", "/budgets/tenants%2Fidle", fmt.Sprintf(`{"paused_until":%d}`, until), http.StatusOK,
			fmt.Sprintf(`{"key":"tenants/idle","allocation":1,"strategy":{"type":"while_in_flight"},"paused_until":%d,%s}`, until, stamps))
		b.failsLike(t, "PATCH", "/budgets/tenants%2Facme", `{"allocation":5,"paused":false}`, http.StatusConflict,
			`^budget 'tenants/acme' is managed by family 'tenants': change the family's per_key instead; only its pause \(paused, paused_until\) is its own$`)
		b.failsLike(t, "PUT", "/budgets/tenants%2Facme", famPlain, http.StatusConflict, `managed by family 'tenants'`)

		paused := func(t *testing.T) map[string]string {
			t.Helper()
			var list api.BudgetList
			b.call(t, "GET", "/budgets?parent=tenants", "", http.StatusOK, &list)
			out := map[string]string{}
			for _, s := range list.Budgets {
				out[s.Key] = fmt.Sprintf("paused=%v until=%d allocation=%d", s.Paused, s.PausedUntil, s.Allocation)
			}
			return out
		}
		want := map[string]string{
			"tenants/acme": "paused=true until=0 allocation=1",
			"tenants/idle": fmt.Sprintf("paused=false until=%d allocation=1", until),
			"tenants/zeta": "paused=false until=0 allocation=1",
		}
		require.Equal(t, want, paused(t))

		// Only the paused tenant's jobs wait.
		ts := b.take(t, "queue=q&prefetch=10")
		require.Equal(t, zeta.ID, ts.next(t, budArrives).ID)
		var w api.Why
		require.Eventually(t, func() bool {
			b.call(t, "GET", "/jobs/"+acme[0].ID+"/why", "", http.StatusOK, &w)
			return w.WaitingFor == api.WaitingBudget
		}, 10*time.Second, 10*time.Millisecond)
		require.Equal(t, "budget 'tenants/acme' is paused", w.Reason)
		ts.none(t, 200*time.Millisecond)

		// A new template, and a PUT of the family, keep the pauses.
		b.call(t, "PATCH", "/budgets/tenants", `{"per_key":{"allocation":2}}`, http.StatusOK, nil)
		b.call(t, "PUT", "/budgets/tenants", `{"allocation":10,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":2,"strategy":{"type":"while_in_flight"}}}`, http.StatusOK, nil)
		for k, v := range want {
			want[k] = strings.Replace(v, "allocation=1", "allocation=2", 1)
		}
		require.Equal(t, want, paused(t))
		ts.none(t, 200*time.Millisecond)

		// And so does a restart.
		ts.close()
		b.restart(t)
		delete(want, "tenants/zeta") // in flight before: ready again, live again
		got := paused(t)
		delete(got, "tenants/zeta")
		require.Equal(t, want, got)

		// The idle tenant's pause ends by itself, and it is gone.
		b.clk.Advance(time.Minute)
		got = paused(t)
		delete(got, "tenants/zeta")
		require.Equal(t, map[string]string{"tenants/acme": "paused=true until=0 allocation=2"}, got)
		b.restart(t)
		got = paused(t)
		delete(got, "tenants/zeta")
		require.Equal(t, map[string]string{"tenants/acme": "paused=true until=0 allocation=2"}, got, "its end was stored")

		// A resume lets the tenant's jobs go.
		ts = b.take(t, "queue=q&prefetch=10")
		var zetaAgain bool
		b.call(t, "PATCH", "/budgets/tenants%2Facme", `{"paused":false}`, http.StatusOK, nil)
		seen := map[string]bool{}
		for range 3 {
			j := ts.next(t, budArrives)
			seen[j.ID] = true
			zetaAgain = zetaAgain || j.ID == zeta.ID
		}
		require.True(t, zetaAgain)
		require.True(t, seen[acme[0].ID] && seen[acme[1].ID], "both of acme's jobs go: allocation 2")
	})
}
