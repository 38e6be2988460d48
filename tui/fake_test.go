package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// fixedNow is the clock of every test.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func nowMs() int64 { return fixedNow.UnixMilli() }

func ptr[T any](v T) *T { return &v }

// jobID makes a 25-character job id.
func jobID(n int) string { return fmt.Sprintf("0dqgm3v1a2b3c4d5e6f7%05d", n) }

// fakeSource serves fixed data; err, when set, fails every call.
type fakeSource struct {
	mu    sync.Mutex
	stats api.Stats
	jobs  map[string]api.JobList
	// parked are the ready jobs that are parked.
	parked api.JobList
	why    map[string]api.Why
	// forecasts and subBudgets answer Forecast and SubBudgets by key.
	forecasts  map[string]api.Forecast
	subBudgets map[string][]api.Budget
	err        error
	calls      []string
}

func (f *fakeSource) Stats(ctx context.Context) (api.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "stats")
	if f.err != nil {
		return api.Stats{}, f.err
	}
	return f.stats, nil
}

func (f *fakeSource) Jobs(ctx context.Context, status string, limit int) (api.JobList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "jobs "+status)
	if f.err != nil {
		return api.JobList{}, f.err
	}
	return f.jobs[status], nil
}

func (f *fakeSource) Parked(ctx context.Context, limit int) (api.JobList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "parked")
	if f.err != nil {
		return api.JobList{}, f.err
	}
	return f.parked, nil
}

func (f *fakeSource) Why(ctx context.Context, id string) (api.Why, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "why "+id)
	if f.err != nil {
		return api.Why{}, f.err
	}
	w, ok := f.why[id]
	if !ok {
		return api.Why{}, errors.New("404 not found")
	}
	return w, nil
}

func (f *fakeSource) DeleteJob(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "delete "+id)
	return f.err
}

func (f *fakeSource) PauseCronGroup(ctx context.Context, group string, paused bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("pause %s %t", group, paused))
	return f.err
}

func (f *fakeSource) CronGroup(ctx context.Context, name string) (api.CronGroup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "cron "+name)
	if f.err != nil {
		return api.CronGroup{}, f.err
	}
	return api.CronGroup{Name: name, Entries: []api.CronEntry{
		{Name: "daily", Expression: "0 3 * * *", NextEnqueueAt: uint64(nowMs() + 60_000)},
		{Name: "hourly", Expression: "0 * * * *", Paused: true},
	}}, nil
}

func (f *fakeSource) PauseCronEntry(ctx context.Context, group, entry string, paused bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("pause %s/%s %t", group, entry, paused))
	return f.err
}

func (f *fakeSource) PauseBudget(ctx context.Context, key string, paused bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("pause budget %s %t", key, paused))
	return f.err
}

func (f *fakeSource) Forecast(ctx context.Context, key string) (api.Forecast, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "forecast "+key)
	if f.err != nil {
		return api.Forecast{}, f.err
	}
	fc, ok := f.forecasts[key]
	if !ok {
		return api.Forecast{}, errors.New("404 not found")
	}
	return fc, nil
}

func (f *fakeSource) SubBudgets(ctx context.Context, family string) ([]api.Budget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "sub-budgets "+family)
	if f.err != nil {
		return nil, f.err
	}
	return f.subBudgets[family], nil
}

// callsOf returns the calls made so far that start with prefix.
func (f *fakeSource) callsOf(prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeSource) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeSource) setStats(s api.Stats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats = s
}

func timeBased(key string, alloc, durMs, burst int64, s api.BudgetState) api.Budget {
	return api.Budget{Key: key, Allocation: alloc, Strategy: api.Strategy{Type: api.StrategyTimeBased, DurationMs: durMs, Burst: burst}, State: &s}
}

func whileInFlight(key string, alloc int64, s api.BudgetState) api.Budget {
	return api.Budget{Key: key, Allocation: alloc, Strategy: api.Strategy{Type: api.StrategyWhileInFlight}, State: &s}
}

// fixtureStats is a server with two budgets holding jobs back.
func fixtureStats() api.Stats {
	return api.Stats{
		Version:  "0.7.0",
		UptimeMs: 3_723_000,
		RSSBytes: 52_428_800,
		Jobs:     api.JobCounts{Scheduled: 3, Ready: 120, Parked: 16, InFlight: 15},
		Queues: []api.QueueStats{
			{Name: "images", Scheduled: 3, Ready: 20, Parked: 12, InFlight: 2},
			{Name: "emails", Ready: 100, Parked: 4, InFlight: 10},
			{Name: "geo", InFlight: 3},
		},
		Budgets: []api.Budget{
			whileInFlight("reports", 2, api.BudgetState{Available: 2, Capacity: 2, Dispatched: 7}),
			timeBased("geo-api", 10000, 3_600_000, 12000, api.BudgetState{Available: 9876.5, Capacity: 12000, InFlight: 3, Dispatched: 501}),
			whileInFlight("smtp", 10, api.BudgetState{Available: 0, Capacity: 10, InFlight: 10, Held: 10, Parked: 4,
				OldestParkedMs: ptr[int64](65_000), Dispatched: 88}),
			timeBased("image-service", 6, 60_000, 0, api.BudgetState{Available: 0.25, Capacity: 6, InFlight: 2, Parked: 12,
				OldestParkedMs: ptr[int64](5_300), NextTokenAt: ptr(nowMs() + 1_200), Dispatched: 1234}),
			timeBased("partner-webhooks-eu-west-1-production", 100, 1000, 0, api.BudgetState{Available: 100, Capacity: 100, Dispatched: 99999}),
		},
		Crons: []api.CronStats{
			{Name: "billing", Entries: 3, PausedEntries: 1, NextEnqueueAt: uint64(nowMs() + 42_000), NextEntry: "invoice-reminders",
				LastEnqueueAt: uint64(nowMs() - 18_000)},
			{Name: "maintenance", Paused: true, Entries: 2, LastEnqueueAt: uint64(nowMs() - 7_200_000)},
			{Name: "reports", Entries: 1, NextEnqueueAt: uint64(nowMs() + 9*3600_000), NextEntry: "nightly"},
		},
	}
}

func fixtureJobs() map[string]api.JobList {
	ready := uint64(nowMs())
	return map[string]api.JobList{
		api.StatusInFlight: {Jobs: []api.Job{
			{ID: jobID(1), Queue: "emails", Type: "send_welcome", Priority: 32768, Status: api.StatusInFlight,
				ReadyAt: ready - 60_000, DequeuedAt: ready - 3_000, Budgets: []api.Binding{{Key: "smtp", Cost: 1}}},
			{ID: jobID(2), Queue: "images", Type: "resize", Priority: 100, Status: api.StatusInFlight, Attempts: 2,
				ReadyAt: ready - 120_000, DequeuedAt: ready - 95_000, Budgets: []api.Binding{{Key: "image-service", Cost: 2}}},
			{ID: jobID(3), Queue: "geo", Type: "geocode_address_batch", Priority: 32768, Status: api.StatusInFlight,
				ReadyAt: ready - 10_000, DequeuedAt: ready - 400, Budgets: []api.Binding{{Key: "geo-api", Cost: 1}}},
		}},
		api.StatusReady: {Jobs: []api.Job{
			{ID: jobID(10), Queue: "images", Type: "resize", Priority: 32768, Status: api.StatusReady,
				ReadyAt: ready - 5_300, Budgets: []api.Binding{{Key: "image-service", Cost: 5}}},
			{ID: jobID(11), Queue: "images", Type: "thumbnail_and_notify", Priority: 32768, Status: api.StatusReady,
				ReadyAt: ready - 2_000, Budgets: []api.Binding{{Key: "image-service", Cost: 1}, {Key: "smtp", Cost: 1}}},
			{ID: jobID(12), Queue: "emails", Type: "digest", Priority: 10, Status: api.StatusReady,
				ReadyAt: ready - 800},
			{ID: jobID(13), Queue: "emails", Type: "digest", Priority: 32768, Status: api.StatusReady,
				ReadyAt: ready - 100},
		}},
		api.StatusScheduled: {Jobs: []api.Job{
			{ID: jobID(20), Queue: "images", Type: "cleanup", Priority: 32768, Status: api.StatusScheduled,
				ReadyAt: ready + 300_000},
			{ID: jobID(21), Queue: "images", Type: "resize", Priority: 5, Status: api.StatusScheduled, Attempts: 1,
				ReadyAt: ready + 7_200_000, Budgets: []api.Binding{{Key: "image-service", Cost: 3}}},
		}},
	}
}

func fixtureWhy() map[string]api.Why {
	return map[string]api.Why{
		jobID(10): {ID: jobID(10), Status: api.StatusReady, WaitingFor: api.WaitingBudget, ReadyAt: uint64(nowMs() - 5_300),
			Budgets: []api.WhyBudget{{Key: "image-service", Cost: 5, Available: 0.25, Ahead: 3, AffordableAt: ptr(nowMs() + 47_500)}}},
		jobID(11): {ID: jobID(11), Status: api.StatusReady, WaitingFor: api.WaitingBudget, ReadyAt: uint64(nowMs() - 2_000),
			Budgets: []api.WhyBudget{
				{Key: "image-service", Cost: 1, Available: 0.25, Ahead: 7, AffordableAt: ptr(nowMs() + 80_000)},
				{Key: "smtp", Cost: 1, Available: 0, Ahead: 3},
			}},
		jobID(12): {ID: jobID(12), Status: api.StatusReady, WaitingFor: api.WaitingWorker, ReadyAt: uint64(nowMs() - 800)},
		jobID(13): {ID: jobID(13), Status: api.StatusReady, WaitingFor: api.WaitingNothing, ReadyAt: uint64(nowMs() - 100)},
	}
}

// fixtureParked are the parked jobs of fixtureJobs: the two that
// fixtureWhy says wait for a budget.
func fixtureParked() api.JobList {
	ready := fixtureJobs()[api.StatusReady].Jobs
	return api.JobList{Jobs: ready[:2]}
}

// fixtureForecasts are the forecasts of fixtureStats' budgets: one exact,
// one estimated, one the server cannot make yet, two with no backlog.
func fixtureForecasts() map[string]api.Forecast {
	return map[string]api.Forecast{
		"image-service":                         {Key: "image-service", Parked: 12, DrainsAt: ptr(nowMs() + 12_000)},
		"smtp":                                  {Key: "smtp", Parked: 4, DrainsAt: ptr(nowMs() + 185_000), Estimated: true},
		"reports":                               {Key: "reports", Parked: 2, Estimated: true},
		"geo-api":                               {Key: "geo-api", DrainsAt: ptr(nowMs())},
		"partner-webhooks-eu-west-1-production": {Key: "partner-webhooks-eu-west-1-production", DrainsAt: ptr(nowMs())},
	}
}

func newFakeSource() *fakeSource {
	return &fakeSource{stats: fixtureStats(), jobs: fixtureJobs(), parked: fixtureParked(), why: fixtureWhy(), forecasts: fixtureForecasts()}
}

// familyStats is a server with a family of 120 tenants, a budget paused
// for 30 more seconds and one paused until resumed.
func familyStats() api.Stats {
	s := fixtureStats()
	tenants := timeBased("tenants", 600, 60_000, 0, api.BudgetState{Available: 512, Capacity: 600, InFlight: 9, Parked: 23,
		OldestParkedMs: ptr[int64](4_000), Dispatched: 4410, SubBudgets: ptr[int64](120)})
	tenants.PerKey = &api.BudgetTemplate{Allocation: 5, Strategy: api.Strategy{Type: api.StrategyWhileInFlight}}
	upstream := timeBased("upstream", 100, 1000, 0, api.BudgetState{Available: 100, Capacity: 100, Parked: 7,
		OldestParkedMs: ptr[int64](12_000), Dispatched: 310})
	upstream.Paused, upstream.PausedUntil = true, uint64(nowMs()+30_000)
	legacy := whileInFlight("legacy", 3, api.BudgetState{Available: 3, Capacity: 3, Dispatched: 12})
	legacy.Paused = true
	s.Budgets = []api.Budget{tenants, upstream, legacy, s.Budgets[0]}
	return s
}

// tenantSubs are the live sub-budgets of the family "tenants".
func tenantSubs() []api.Budget {
	sub := func(name string, inFlight, parked int64) api.Budget {
		return whileInFlight("tenants/"+name, 5, api.BudgetState{Available: float64(5 - inFlight), Capacity: 5, InFlight: inFlight, Held: inFlight, Parked: parked})
	}
	return []api.Budget{sub("acme", 4, 12), sub("beta", 2, 0), sub("delta", 2, 3), sub("gamma", 1, 8), sub("omega", 0, 0)}
}

func newFamilySource() *fakeSource {
	src := newFakeSource()
	src.stats = familyStats()
	src.subBudgets = map[string][]api.Budget{"tenants": tenantSubs()}
	src.forecasts["tenants"] = api.Forecast{Key: "tenants", Parked: 23, DrainsAt: ptr(nowMs() + 2_300)}
	src.forecasts["upstream"] = api.Forecast{Key: "upstream", Parked: 7, DrainsAt: ptr(nowMs() + 30_070)}
	src.forecasts["legacy"] = api.Forecast{Key: "legacy"}
	return src
}

// withExtras runs one round of forecasts, as the Budgets tab's ticker
// would.
func withExtras(t *testing.T, m Model) Model {
	t.Helper()
	cmd := m.fetchExtras()
	if cmd == nil {
		return m
	}
	return update(t, m, cmd())
}

func testOptions() Options {
	return Options{URL: "http://127.0.0.1:7890", Now: func() time.Time { return fixedNow }, NoColor: true}
}

// newTestModel returns a dashboard of size w×h that has fetched once.
func newTestModel(t *testing.T, src Source, w, h int) Model {
	t.Helper()
	m := New(src, testOptions())
	m = update(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	return run(t, m, m.Init())
}

// update applies one message.
func update(t *testing.T, m Model, msg tea.Msg) Model {
	t.Helper()
	next, _ := m.Update(msg)
	return next.(Model)
}

// run executes cmd (a fetch, never a tick) and applies its message, and
// the fetches that message asks for in turn.
func run(t *testing.T, m Model, cmd tea.Cmd) Model {
	t.Helper()
	if cmd == nil {
		return m
	}
	msg := cmd()
	switch msg := msg.(type) {
	case fetchMsg:
		next, cmd := m.Update(msg)
		if msg.poll {
			return next.(Model) // cmd holds the next tick: never waited for
		}
		return run(t, next.(Model), cmd)
	case whyMsg:
		return update(t, m, msg)
	}
	return m
}

// press sends each key in turn, running the fetches the keys ask for.
func press(t *testing.T, m Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		next, cmd := m.Update(keyMsg(k))
		m = run(t, next.(Model), cmd)
	}
	return m
}

// keyMsg turns a key name, as key.Binding spells them, into the key press
// Bubble Tea reports for it.
func keyMsg(k string) tea.KeyPressMsg {
	named := map[string]tea.Key{
		"up": {Code: tea.KeyUp}, "down": {Code: tea.KeyDown}, "pgup": {Code: tea.KeyPgUp}, "pgdown": {Code: tea.KeyPgDown},
		"home": {Code: tea.KeyHome}, "end": {Code: tea.KeyEnd}, "tab": {Code: tea.KeyTab}, "shift+tab": {Code: tea.KeyTab, Mod: tea.ModShift},
		"esc": {Code: tea.KeyEscape}, "enter": {Code: tea.KeyEnter}, "ctrl+c": {Code: 'c', Mod: tea.ModCtrl}, "backspace": {Code: tea.KeyBackspace},
	}
	if key, ok := named[k]; ok {
		return tea.KeyPressMsg(key)
	}
	r := []rune(k)
	if len(r) != 1 {
		panic("keyMsg: one key at a time: " + k)
	}
	key := tea.Key{Code: r[0], Text: k}
	if unicode.IsUpper(r[0]) {
		key.Code, key.ShiftedCode, key.Mod = unicode.ToLower(r[0]), r[0], tea.ModShift
	}
	return tea.KeyPressMsg(key)
}

// screen is what the dashboard shows.
func screen(m Model) string { return m.View().Content }

func requireNoEscapes(t *testing.T, s string) {
	t.Helper()
	require.NotContains(t, s, "\x1b", "plain output must carry no escape sequences")
}

// settleStats is a server whose jobs settle their real costs: a calendar
// budget that resets at midnight in Paris (11 hours after fixedNow), a
// rate budget 1500.5 tokens in debt with jobs parked behind it, one that
// resets on weekdays, and a plain one.
func settleStats() api.Stats {
	s := fixtureStats()
	tpd := api.Budget{Key: "openai-tpd", Allocation: 100000,
		Strategy: api.Strategy{Type: api.StrategyCalendar, Reset: "0 0 * * *", Timezone: "Europe/Paris"},
		State: &api.BudgetState{Available: 98166, Capacity: 100000, InFlight: 2, Dispatched: 14, Used: ptr[int64](1834),
			NextResetAt: ptr(nowMs() + 11*3600_000), Settled: &api.Settled{Count: 12, Credited: 2400, Debited: 600}, CostRatio: ptr(0.8333)}}
	tpm := timeBased("openai-tpm", 90000, 60_000, 0, api.BudgetState{Available: -1500.5, Capacity: 90000, InFlight: 4, Parked: 3,
		OldestParkedMs: ptr[int64](900), NextTokenAt: ptr(nowMs() + 1_100), Dispatched: 310,
		Debt: ptr(1500.5), RepaidAt: ptr(nowMs() + 1_001), Settled: &api.Settled{Count: 40, Credited: 1200, Debited: 8300}, CostRatio: ptr(1.2345)})
	weekdays := api.Budget{Key: "weekdays", Allocation: 10, Strategy: api.Strategy{Type: api.StrategyCalendar, Reset: "0 9 * * 1-5"},
		State: &api.BudgetState{Available: 7, Capacity: 10, Used: ptr[int64](3), NextResetAt: ptr(nowMs() + 2*86_400_000 - 3*3600_000)}}
	s.Budgets = []api.Budget{tpm, s.Budgets[0], weekdays, tpd}
	return s
}

func newSettleSource() *fakeSource {
	src := newFakeSource()
	src.stats = settleStats()
	src.forecasts["openai-tpm"] = api.Forecast{Key: "openai-tpm", Parked: 3, DrainsAt: ptr(nowMs() + 4_000)}
	return src
}
