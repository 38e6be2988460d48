package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// A family's per-sub-key weights and allocations over HTTP (issue 26):
// shapes, PUT and PATCH semantics, refusals, a restart, and weighted
// shares over real take streams. Names take a "wt" prefix: other test
// files of the package are written concurrently.

const (
	// wtFamily is a family of one job in flight at a time, the bottleneck:
	// its sub-keys share it by their weights.
	wtFamily = `{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":100000,"strategy":{"type":"while_in_flight"}}`
	wtEcho   = `"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":100000,"strategy":{"type":"while_in_flight"}}`
)

// wtBody is wtFamily with keys (a JSON object's members, or "").
func wtBody(keys string) string {
	if keys == "" {
		return wtFamily + `}`
	}
	return wtFamily + `,"keys":{` + keys + `}}`
}

// TestWeights_Shapes: keys come back after per_key, sorted, each member
// only when set, and none when empty; a sub-budget shows its weight and
// its allocation, idle or live, listed with or without its state.
func TestWeights_Shapes(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		stamps := famStamps(famT0, famT0)
		keys := `"keys":{"acme":{"weight":3,"allocation":20},"globex":{"weight":1},"initech":{"allocation":7}}`
		family := `{"key":"tenants",` + wtEcho + `,` + keys + `,` + stamps + `}`
		b.exact(t, "PUT", "/budgets/tenants", wtBody(`"initech":{"allocation":7},"globex":{"weight":1},"acme":{"allocation":20,"weight":3},"hooli":{}`),
			http.StatusOK, family)
		b.exact(t, "GET", "/budgets/tenants", "", http.StatusOK, family)
		var list api.BudgetList
		b.call(t, "GET", "/budgets", "", http.StatusOK, &list)
		require.Len(t, list.Budgets, 1)
		require.Equal(t, api.KeyOverrides{"acme": {Weight: 3, Allocation: 20}, "globex": {Weight: 1}, "initech": {Allocation: 7}}, list.Budgets[0].Keys)

		sub := func(key string, alloc int64, weight int) string {
			return fmt.Sprintf(`{"key":"tenants/%s","allocation":%d,"strategy":{"type":"while_in_flight"},"weight":%d,%s}`, key, alloc, weight, stamps)
		}
		b.exact(t, "GET", "/budgets/tenants%2Facme", "", http.StatusOK, sub("acme", 20, 3))
		b.exact(t, "GET", "/budgets/tenants%2Finitech", "", http.StatusOK, sub("initech", 7, 1))
		b.exact(t, "GET", "/budgets/tenants%2Fother", "", http.StatusOK, sub("other", 100000, 1))
		idle := b.budget(t, "/budgets/tenants%2Facme?state=true")
		require.Equal(t, int64(3), idle.Weight)
		require.Equal(t, int64(20), idle.State.Capacity, "an idle sub-budget's pool, as it would be made")

		b.famJob(t, "nobody", `[{"key":"tenants/acme"}]`)
		b.famJob(t, "nobody", `[{"key":"tenants/zeta"}]`)
		for _, q := range []string{"", "&state=true"} {
			b.call(t, "GET", "/budgets?parent=tenants"+q, "", http.StatusOK, &list)
			require.Equal(t, []string{"tenants/acme", "tenants/zeta"}, famKeys(list.Budgets))
			require.Equal(t, []int64{3, 1}, []int64{list.Budgets[0].Weight, list.Budgets[1].Weight})
			require.Equal(t, []int64{20, 100000}, []int64{list.Budgets[0].Allocation, list.Budgets[1].Allocation})
			require.Equal(t, q != "", list.Budgets[0].State != nil)
		}

		// Without keys, or with them empty or null, a family has no keys
		// member.
		plain := `{"key":"tenants",` + wtEcho + `,` + famStamps(famT0, famT0) + `}`
		for _, body := range []string{wtBody(""), wtBody(`"hooli":{}`), wtFamily + `,"keys":{}}`, wtFamily + `,"keys":null}`} {
			b.exact(t, "PUT", "/budgets/tenants", body, http.StatusOK, plain)
		}
	})
}

// TestWeights_PutReplacesPatchMerges: PUT replaces the keys whole; PATCH
// merges per sub-key and per member, null removing one member, one key's
// override or all of them; a family made plain has none.
func TestWeights_PutReplacesPatchMerges(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		keysOf := func() api.KeyOverrides { return b.budget(t, "/budgets/tenants").Keys }
		b.call(t, "PUT", "/budgets/tenants", wtBody(`"acme":{"weight":3,"allocation":20},"globex":{"weight":2}`), http.StatusOK, nil)
		b.call(t, "PUT", "/budgets/tenants", wtBody(`"acme":{"weight":5}`), http.StatusOK, nil)
		require.Equal(t, api.KeyOverrides{"acme": {Weight: 5}}, keysOf(), "PUT replaces")

		for _, step := range []struct {
			patch string
			want  api.KeyOverrides
		}{
			{`{"keys":{"acme":{"allocation":20},"globex":{"weight":2}}}`, api.KeyOverrides{"acme": {Weight: 5, Allocation: 20}, "globex": {Weight: 2}}},
			{`{"keys":{"acme":{"weight":null}}}`, api.KeyOverrides{"acme": {Allocation: 20}, "globex": {Weight: 2}}},
			{`{"keys":{"acme":{"allocation":null}}}`, api.KeyOverrides{"globex": {Weight: 2}}},
			{`{"keys":{"initech":{"weight":1000},"globex":null,"absent":null}}`, api.KeyOverrides{"initech": {Weight: 1000}}},
			{`{"allocation":2}`, api.KeyOverrides{"initech": {Weight: 1000}}},
			{`{"keys":{}}`, api.KeyOverrides{"initech": {Weight: 1000}}},
			{`{"keys":null}`, nil},
			{`{"keys":{"acme":{"weight":4}}}`, api.KeyOverrides{"acme": {Weight: 4}}},
		} {
			b.call(t, "PATCH", "/budgets/tenants", step.patch, http.StatusOK, nil)
			require.Equal(t, step.want, keysOf(), "after %s", step.patch)
		}
		require.Equal(t, int64(4), b.budget(t, "/budgets/tenants%2Facme").Weight, "a sub-budget follows")

		// A plain budget made a family takes keys in the same patch; a
		// family made plain loses them.
		b.call(t, "PATCH", "/budgets/tenants", `{"per_key":null}`, http.StatusOK, nil)
		require.Nil(t, keysOf())
		b.call(t, "PATCH", "/budgets/tenants", `{"per_key":{"allocation":2,"strategy":{"type":"while_in_flight"}},"keys":{"x":{"weight":2}}}`, http.StatusOK, nil)
		require.Equal(t, api.KeyOverrides{"x": {Weight: 2}}, keysOf())
	})
}

// TestWeights_BadInput: every refusal names the member, with the status
// of its kind (400 undecodable, 422 a broken rule), and changes nothing.
func TestWeights_BadInput(t *testing.T) {
	t.Parallel()
	many := make([]string, 10_001)
	for i := range many {
		many[i] = fmt.Sprintf(`"k%d":{"weight":2}`, i)
	}
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		{"WeightZero", "PUT", "/budgets/f", wtBody(`"acme":{"weight":0}`), 422, "keys.acme.weight must be an integer from 1 to 1000, got 0"},
		{"WeightNegative", "POST", "/budgets/new", wtBody(`"acme":{"weight":-3}`), 422, "keys.acme.weight must be an integer from 1 to 1000, got -3"},
		{"WeightTooLarge", "PUT", "/budgets/f", wtBody(`"acme":{"weight":1001}`), 422, "keys.acme.weight must be an integer from 1 to 1000, got 1001"},
		{"WeightNotAnInteger", "PUT", "/budgets/f", wtBody(`"acme":{"weight":1.5}`), 400, "invalid JSON: keys.acme.weight: cannot unmarshal number 1.5 into int64"},
		{"WeightAString", "PUT", "/budgets/f", wtBody(`"acme":{"weight":"3"}`), 400, "invalid JSON: keys.acme.weight: cannot unmarshal string into int64"},
		{"AllocationZero", "PUT", "/budgets/f", wtBody(`"acme":{"allocation":0}`), 422, "keys.acme.allocation must be at least 1"},
		{"AllocationTooLarge", "PUT", "/budgets/f", wtBody(`"acme":{"allocation":2147483648}`), 422, "keys.acme.allocation must be at most 2147483647"},
		{"KeyWithSlash", "PUT", "/budgets/f", wtBody(`"a/b":{"weight":2}`), 422, `keys: sub-key "a/b" must not contain '/'`},
		{"KeyEmpty", "PUT", "/budgets/f", wtBody(`"":{"weight":2}`), 422, "keys: a sub-key must not be empty"},
		{"KeyWithComma", "PUT", "/budgets/f", wtBody(`"a,b":{"weight":2}`), 422, `keys: sub-key "a,b" must not contain ','`},
		{"KeyReserved", "PUT", "/budgets/f", wtBody(`"a*":{"weight":2}`), 422, `keys: sub-key "a*" must not contain '*' (reserved)`},
		{"UnknownMember", "PUT", "/budgets/f", wtBody(`"acme":{"wieght":2}`), 422, "keys.acme.wieght is not a field of a key override (expected weight or allocation)"},
		{"NotAnObject", "PUT", "/budgets/f", wtFamily + `,"keys":[1]}`, 400, "invalid JSON: keys: cannot unmarshal array into object"},
		{"OverrideNotAnObject", "PUT", "/budgets/f", wtFamily + `,"keys":{"acme":3}}`, 400, "invalid JSON: keys.acme: cannot unmarshal number into object"},
		{"NotAFamily", "PUT", "/budgets/plain", `{"allocation":3,"strategy":{"type":"while_in_flight"},"keys":{"acme":{"weight":2}}}`, 422, "keys is only valid for a family: a budget with per_key"},
		{"TooMany", "PUT", "/budgets/f", wtBody(strings.Join(many, ",")), 422, "keys holds 10001 overrides: a family holds at most 10000"},
		{"CreateWith", "POST", "/jobs", `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"n","create_with":{"allocation":1,"strategy":{"type":"while_in_flight"},"keys":{"a":{"weight":2}}}}]}`,
			400, "create_with: keys is not allowed here: set it with PUT or PATCH /budgets/{key}"},
		{"PatchWeightZero", "PATCH", "/budgets/f", `{"keys":{"acme":{"weight":0}}}`, 422, "keys.acme.weight must be an integer from 1 to 1000, got 0"},
		{"PatchWeightTooLarge", "PATCH", "/budgets/f", `{"keys":{"b":null,"acme":{"weight":5000}}}`, 422, "keys.acme.weight must be an integer from 1 to 1000, got 5000"},
		{"PatchWeightNotAnInteger", "PATCH", "/budgets/f", `{"keys":{"acme":{"weight":2.5}}}`, 400, "invalid JSON: keys.acme.weight must be an integer"},
		{"PatchAllocationNegative", "PATCH", "/budgets/f", `{"keys":{"acme":{"allocation":-1}}}`, 422, "keys.acme.allocation must be at least 1"},
		{"PatchKeyWithSlash", "PATCH", "/budgets/f", `{"keys":{"x/y":{"weight":2}}}`, 422, `keys: sub-key "x/y" must not contain '/'`},
		{"PatchUnknownMember", "PATCH", "/budgets/f", `{"keys":{"acme":{"share":2}}}`, 422, `unknown field "keys.acme.share"`},
		{"PatchNotAnObject", "PATCH", "/budgets/f", `{"keys":"all"}`, 400, "invalid JSON: keys must be an object"},
		{"PatchOverrideNotAnObject", "PATCH", "/budgets/f", `{"keys":{"acme":true}}`, 400, "invalid JSON: keys.acme must be an object"},
		{"PatchNotAFamily", "PATCH", "/budgets/plain", `{"keys":{"acme":{"weight":2}}}`, 422, "keys is only valid for a family: a budget with per_key"},
		{"PatchMadePlainWithKeys", "PATCH", "/budgets/f", `{"per_key":null,"keys":{"acme":{"weight":2}}}`, 422, "keys is only valid for a family: a budget with per_key"},
		{"PatchTooMany", "PATCH", "/budgets/f", `{"keys":{` + strings.Join(many, ",") + `}}`, 422, "keys holds 10002 overrides: a family holds at most 10000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			famEachFormat(t, func(t *testing.T, b *famBundle) {
				b.call(t, "PUT", "/budgets/f", wtBody(`"acme":{"weight":3,"allocation":20}`), http.StatusOK, nil)
				b.call(t, "PUT", "/budgets/plain", famPlain, http.StatusOK, nil)
				before := b.snapshot(t, tc.path)
				msg := tc.msg
				if b.format == api.MsgPack {
					msg = strings.Replace(msg, "invalid JSON: ", "invalid MessagePack: ", 1)
				}
				b.fails(t, tc.method, tc.path, tc.body, tc.status, msg)
				require.Equal(t, before, b.snapshot(t, tc.path), "a refused request changes nothing")
			})
		})
	}
}

// TestWeights_AllocationBelowBoundCost: like a template change, a key's
// allocation (or its removal) that a live sub-budget's unfinished job
// could never pay is 422, and changes nothing.
func TestWeights_AllocationBelowBoundCost(t *testing.T) {
	t.Parallel()
	b := famSetup(t, api.JSON)
	b.call(t, "PUT", "/budgets/f", `{"allocation":50,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":5,"strategy":{"type":"while_in_flight"}},"keys":{"acme":{"allocation":20}}}`, http.StatusOK, nil)
	b.famJob(t, "nobody", `[{"key":"f/acme","cost":12}]`)
	before := b.snapshot(t, "/budgets/f%2Facme")
	pattern := `^budget 'f/acme' cannot allocate \d+: 1 unfinished job draw up to 12 from it`
	b.failsLike(t, "PATCH", "/budgets/f", `{"keys":{"acme":{"allocation":10}}}`, 422, pattern)
	b.failsLike(t, "PATCH", "/budgets/f", `{"keys":{"acme":null}}`, 422, pattern)
	b.failsLike(t, "PUT", "/budgets/f", `{"allocation":50,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":5,"strategy":{"type":"while_in_flight"}}}`, 422, pattern)
	require.Equal(t, before, b.snapshot(t, "/budgets/f%2Facme"))
	b.call(t, "PATCH", "/budgets/f", `{"keys":{"acme":{"allocation":12}}}`, http.StatusOK, nil)
	b.fails(t, "POST", "/jobs", `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"f/globex","cost":12}]}`, 422,
		"job cost 12 exceeds budget 'f/globex' allocation 5")
}

// TestWeights_RestartKeepsKeys: the keys are stored with their family.
func TestWeights_RestartKeepsKeys(t *testing.T) {
	t.Parallel()
	b := famSetup(t, api.JSON)
	b.call(t, "PUT", "/budgets/tenants", wtBody(`"acme":{"weight":3,"allocation":20},"globex":{"weight":1}`), http.StatusOK, nil)
	b.famJob(t, "nobody", `[{"key":"tenants/acme"}]`)
	_, family := b.send(t, "GET", "/budgets/tenants", "")
	_, acme := b.send(t, "GET", "/budgets/tenants%2Facme", "")
	require.Contains(t, acme, `"weight":3`)
	b.restart(t)
	b.exact(t, "GET", "/budgets/tenants", "", http.StatusOK, family)
	b.exact(t, "GET", "/budgets/tenants%2Facme", "", http.StatusOK, acme)
}

// wtShares requires, over every window of 200 consecutive deliveries of
// subs, that sub-key a has share of them within 5 points.
func wtShares(t *testing.T, subs []string, a string, share float64) {
	t.Helper()
	const window = 200
	require.GreaterOrEqual(t, len(subs), window)
	for i := 0; i+window <= len(subs); i++ {
		n := 0
		for _, s := range subs[i : i+window] {
			if s == a {
				n++
			}
		}
		require.InDelta(t, share, float64(n)/window, 0.05, "%s has %d of deliveries %d..%d: %s", a, n, i, i+window-1, strings.Join(subs, " "))
	}
}

// TestWeightsRealtime_SharesOverTakeStreams: tenants of weights 3 and 1,
// both backlogged on a saturated family, receive 75% and 25% of the
// deliveries within 5 points over every 200 in a row, to workers over
// real take streams: a family of one in flight, and one paced at a token
// every 10 ms on the injected clock.
func TestWeightsRealtime_SharesOverTakeStreams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, own string
		paced     bool
	}{
		{"while_in_flight", `{"allocation":1,"strategy":{"type":"while_in_flight"}`, false},
		{"time_based", `{"allocation":1,"strategy":{"type":"time_based","duration_ms":10}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := famSetup(t, api.JSON)
			b.call(t, "PUT", "/budgets/tenants", tc.own+`,"per_key":{"allocation":100000,"strategy":{"type":"while_in_flight"}},"keys":{"acme":{"weight":3},"globex":{"weight":1}}}`, http.StatusOK, nil)
			b.famJobs(t, 400, "q", `[{"key":"tenants/acme"}]`)
			b.famJobs(t, 400, "q", `[{"key":"tenants/globex"}]`)
			f := budNewFleet(t, b.testBundle)
			for range 2 {
				f.worker("queue=q&prefetch=2", func(fr budFrame) { f.spawn(func() { f.ack(fr.job.ID) }) })
			}
			var subs []string
			for len(subs) < 500 {
				select {
				case fr := <-f.arrived:
					subs = append(subs, strings.TrimPrefix(fr.job.Budgets[0].Key, "tenants/"))
				case <-time.After(20 * time.Millisecond):
					if tc.paced {
						famNextTimer(b)
					}
				}
			}
			wtShares(t, subs, "acme", 0.75)
		})
	}
}
