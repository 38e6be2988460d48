package storetest

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// testFilters checks every Filter field, alone and together, through the
// three reads that take one (JobIDs, CountJobs, ListJobs).
func testFilters(t *testing.T, newB func(testing.TB) *bundle) {
	b := newB(t)
	// Ten jobs: queue a/b/c, types x/y, all statuses, priorities 0..9,
	// attempts n%3, budgets on some, two awaiting purge.
	var ops []store.Op
	for n := range 10 {
		ops = append(ops, store.InsertJob(with(n, func(j *store.Job) {
			j.Queue = string("abc"[n%3])
			j.Type = string("xy"[n%2])
			j.Status = store.Status(n % 5)
			j.Priority = uint16(n)
			j.ReadyAt = int64(100 + n)
			j.Attempts = uint32(n % 3)
			j.Payload = []byte(`{"even":` + map[bool]string{true: "true", false: "false"}[n%2 == 0] + `}`)
			switch n {
			case 1:
				j.Budgets = []store.Binding{{Key: "k1", Cost: 1}}
			case 2:
				j.Budgets = []store.Binding{{Key: "k2", Cost: 1}, {Key: "k1", Cost: 2}}
			case 3:
				j.Budgets = []store.Binding{{Key: "k3", Cost: 1}}
			case 0: // not under "f_/", though LIKE 'f_/%' would say so
				j.Budgets = []store.Binding{{Key: "fx/a", Cost: 1}}
			case 5, 6: // sub-budgets of family "f_"
				j.Budgets = []store.Binding{{Key: "f_/" + string("ab"[n-5]), Cost: 1}}
			case 7: // a budget of its own under the family's name
				j.Budgets = []store.Binding{{Key: "f_/own", Cost: 1}}
			case 8: // under a budget of its own
				j.Budgets = []store.Binding{{Key: "f_/own/x", Cost: 1}}
			case 9: // the family itself
				j.Budgets = []store.Binding{{Key: "f_", Cost: 1}}
			}
			if n == 3 || n == 4 { // completed and dead
				j.PurgeAt = int64(500 + n)
			}
		})))
	}
	b.apply(t, ops...)

	u := func(v uint64) *uint64 { return &v }
	many := make([]string, 100)
	for i := range many {
		many[i] = id(1000 + i)
	}
	many[50] = id(7)
	manyKeys := slices.Repeat([]string{"k0"}, 70)
	manyKeys[33] = "k3"
	even := func(p []byte) bool { return bytes.Contains(p, []byte("true")) }
	// A Within set larger than any sensible batch, mostly of no job.
	var large []string
	for n := range 2500 {
		large = append(large, id(n*7%2500))
	}

	for name, tc := range map[string]struct {
		f    store.Filter
		want []string
	}{
		"None":             {store.Filter{}, ids(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
		"IDs":              {store.Filter{IDs: []string{id(2), id(5), "nope"}}, ids(2, 5)},
		"ManyIDs":          {store.Filter{IDs: many}, ids(7)},
		"Queues":           {store.Filter{Queues: []string{"a", "c"}}, ids(0, 2, 3, 5, 6, 8, 9)},
		"Types":            {store.Filter{Types: []string{"y"}}, ids(1, 3, 5, 7, 9)},
		"Statuses":         {store.Filter{Statuses: []store.Status{store.Scheduled, store.Dead}}, ids(0, 4, 5, 9)},
		"StatusReady":      {store.Filter{Statuses: []store.Status{store.Ready}}, ids(1, 6)},
		"BudgetKeys":       {store.Filter{BudgetKeys: []string{"k1"}}, ids(1, 2)},
		"BudgetKeysOr":     {store.Filter{BudgetKeys: []string{"k2", "k3", "k9"}}, ids(2, 3)},
		"ManyBudgetKeys":   {store.Filter{BudgetKeys: manyKeys}, ids(3)},
		"FamilyKeyAlone":   {store.Filter{BudgetKeys: []string{"f_"}}, ids(9)},
		"SubBudgetsOf":     {store.Filter{BudgetKeys: []string{"f_"}, SubBudgetsOf: []string{"f_"}}, ids(5, 6, 7, 8, 9)},
		"NotSubBudgets":    {store.Filter{BudgetKeys: []string{"f_", "k3"}, SubBudgetsOf: []string{"f_"}, NotSubBudgets: []string{"f_/own"}}, ids(3, 5, 6, 9)},
		"NotSubButAsked":   {store.Filter{BudgetKeys: []string{"f_", "f_/own"}, SubBudgetsOf: []string{"f_"}, NotSubBudgets: []string{"f_/own"}}, ids(5, 6, 7, 9)},
		"SubBudgetsOfMany": {store.Filter{BudgetKeys: append([]string{"f_"}, manyKeys...), SubBudgetsOf: []string{"f_", "fx"}, NotSubBudgets: slices.Repeat([]string{"f_/own"}, 70), Types: []string{"x"}}, ids(0, 6)},
		"ManyStatuses":     {store.Filter{Statuses: slices.Repeat([]store.Status{store.Dead}, 70)}, ids(4, 9)},
		"PriorityRange":    {store.Filter{Priority: &store.Range{Lo: u(3), Hi: u(5)}}, ids(3, 4, 5)},
		"PriorityLo":       {store.Filter{Priority: &store.Range{Lo: u(8)}}, ids(8, 9)},
		"PriorityHi":       {store.Filter{Priority: &store.Range{Hi: u(1)}}, ids(0, 1)},
		"ReadyAtExact":     {store.Filter{ReadyAt: &store.Range{Lo: u(104), Hi: u(104)}}, ids(4)},
		"ReadyAtHuge":      {store.Filter{ReadyAt: &store.Range{Lo: u(math.MaxUint64)}}, ids()},
		"ReadyAtHugeHi":    {store.Filter{ReadyAt: &store.Range{Lo: u(108), Hi: u(math.MaxUint64)}}, ids(8, 9)},
		"Attempts":         {store.Filter{Attempts: &store.Range{Lo: u(2)}}, ids(2, 5, 8)},
		"PurgeVisible":     {store.Filter{Now: 503}, ids(0, 1, 2, 4, 5, 6, 7, 8, 9)},
		"PurgeBothGone":    {store.Filter{Now: 600}, ids(0, 1, 2, 5, 6, 7, 8, 9)},
		"Match":            {store.Filter{Match: even}, ids(0, 2, 4, 6, 8)},
		"AndAcrossFields":  {store.Filter{Queues: []string{"a"}, Types: []string{"x"}, Attempts: &store.Range{Hi: u(1)}}, ids(0, 6)},
		"AllFields":        {store.Filter{IDs: ids(2, 3, 4), Queues: []string{"c", "b"}, Types: []string{"x", "y"}, Statuses: []store.Status{store.Ready, store.Completed, store.InFlight}, BudgetKeys: []string{"k1", "k2"}, Priority: &store.Range{Lo: u(2)}, ReadyAt: &store.Range{Hi: u(102)}, Attempts: &store.Range{Lo: u(2), Hi: u(2)}, Now: 1, Match: func([]byte) bool { return true }}, ids(2)},
		"NothingMatches":   {store.Filter{Queues: []string{"zzz"}}, ids()},
		"MatchRejectsAll":  {store.Filter{Match: func([]byte) bool { return false }}, ids()},
		"StatusesAndPurge": {store.Filter{Statuses: []store.Status{store.Completed, store.Dead}, Now: 600}, ids(8, 9)},
		"Within":           {store.Filter{Within: store.NewIDSet([]string{id(7), id(2), id(2), id(99)})}, ids(2, 7)},
		"WithinEmpty":      {store.Filter{Within: store.NewIDSet(nil)}, ids()},
		"WithinLarge":      {store.Filter{Within: store.NewIDSet(large), Statuses: []store.Status{store.Ready, store.Scheduled}}, ids(0, 1, 5, 6)},
		"WithinAndFields":  {store.Filter{Within: store.NewIDSet(ids(1, 2, 5, 6, 7)), Queues: []string{"c", "a"}, Statuses: []store.Status{store.Ready, store.Completed}, Now: 600}, ids(6)},
		"WithinAndIDs":     {store.Filter{Within: store.NewIDSet(ids(1, 2, 5)), IDs: ids(2, 5, 8)}, ids(2, 5)},
		"WithinAndMatch":   {store.Filter{Within: store.NewIDSet(ids(1, 2, 3, 4)), Match: even}, ids(2, 4)},
		"WithinBudgetKeys": {store.Filter{Within: store.NewIDSet(ids(2, 3, 9)), BudgetKeys: []string{"k1", "k3"}, Types: []string{"x", "y"}}, ids(2, 3)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := b.s.JobIDs(b.ctx, tc.f)
			require.NoError(t, err)
			require.Equal(t, tc.want, append([]string{}, got...))

			n, err := b.s.CountJobs(b.ctx, tc.f)
			require.NoError(t, err)
			require.EqualValues(t, len(tc.want), n)

			jobs, more, err := b.s.ListJobs(b.ctx, tc.f, "", store.Asc, 100)
			require.NoError(t, err)
			require.False(t, more)
			require.Equal(t, tc.want, append([]string{}, jobIDs(jobs)...))
			jobs, more, err = b.s.ListJobs(b.ctx, tc.f, "", store.Desc, 100)
			require.NoError(t, err)
			require.False(t, more)
			require.Equal(t, reversed(tc.want), append([]string{}, jobIDs(jobs)...))
		})
	}
}
