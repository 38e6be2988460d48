package core_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// TestCron_MatchesModel drives the scheduler on a fake clock through
// random groups, expressions (descriptors, @every, seconds fields,
// timezones across daylight-saving changes), puts, pauses, resumes,
// deletes and restarts, and checks it against a model that knows the
// documented rules and finds occurrences by reading wall clocks itself:
//
//   - every occurrence fires once, at its instant, while the server runs;
//   - a paused entry or group enqueues nothing, and its schedule moves on;
//   - occurrences missed while the server was down fire once, at start,
//     and an occurrence that fired before a restart does not fire again;
//   - an entry whose expression and timezone a put leaves alone keeps its
//     next occurrence; a new or changed one gets the first after now.
//
// The clock moves to each instant the model says is due and waits there
// until the server agrees with the model, so an entry left behind (next
// in the past) fails the test, as does a fire too many or too few.
func TestCron_MatchesModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			newCronSim(t, seed).run(50)
		})
	}
}

// cronZones are the timezones entries and groups take ("": the server's).
var cronZones = []string{"", "UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata"}

// cronAnchors are the moments a run starts shortly before: daylight-saving
// changes of the zones above (both ways), and a plain day.
var cronAnchors = []time.Time{
	time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC),  // Paris: 02:00 CET -> 03:00 CEST
	time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC), // Paris: 03:00 CEST -> 02:00 CET
	time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC),   // New York: 02:00 EST -> 03:00 EDT
	time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC),  // New York: 02:00 EDT -> 01:00 EST
	time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC),
}

// cronSpec is a generated expression and the occurrences it means: the
// wall-clock seconds, minutes, hours and weekdays it matches (day of month
// and month are always *), or a fixed interval.
type cronSpec struct {
	expr  string
	every int64 // seconds; 0 for the fields
	sec   []bool
	min   []bool
	hour  []bool
	dow   []bool
}

// next returns the first occurrence after the second that holds afterMs
// in loc, or 0, found by reading the wall clock second after second
// (skipping whole hours and minutes that cannot match).
func (c cronSpec) next(afterMs int64, loc *time.Location) int64 {
	base := afterMs - afterMs%1000
	if c.every > 0 {
		return base + c.every*1000
	}
	t := time.UnixMilli(base).Add(time.Second)
	for end := t.Add(8 * 24 * time.Hour); t.Before(end); {
		w := t.In(loc)
		switch {
		case !c.dow[w.Weekday()] || !c.hour[w.Hour()]:
			t = t.Add(time.Duration(3600-w.Minute()*60-w.Second()) * time.Second)
		case !c.min[w.Minute()]:
			t = t.Add(time.Duration(60-w.Second()) * time.Second)
		case !c.sec[w.Second()]:
			t = t.Add(time.Second)
		default:
			return t.UnixMilli()
		}
	}
	return 0
}

// genField returns a cron field over [lo, hi] and the values it matches;
// a sparse field is never "*".
func genField(r *rand.Rand, lo, hi int, sparse bool, pick func() int) (string, []bool) {
	set := make([]bool, hi+1)
	mark := func(a, b, step int) {
		for v := a; v <= b; v += step {
			set[v] = true
		}
	}
	a, b := pick(), pick()
	if a > b {
		a, b = b, a
	}
	step := 2 + r.IntN(min(14, (hi-lo)/2))
	switch k := r.IntN(6); {
	case k == 0 && !sparse:
		mark(lo, hi, 1)
		return "*", set
	case k <= 1:
		mark(lo, hi, step)
		return fmt.Sprintf("*/%d", step), set
	case k == 2:
		mark(a, a, 1)
		return strconv.Itoa(a), set
	case k == 3 && !sparse:
		mark(a, b, 1)
		return fmt.Sprintf("%d-%d", a, b), set
	case k == 4:
		mark(a, b, step)
		return fmt.Sprintf("%d-%d/%d", a, b, step), set
	default:
		mark(a, a, 1)
		mark(b, b, 1)
		return fmt.Sprintf("%d,%d", a, b), set
	}
}

func all(n int) []bool {
	s := make([]bool, n)
	for i := range s {
		s[i] = true
	}
	return s
}

func only(n int, vals ...int) []bool {
	s := make([]bool, n)
	for _, v := range vals {
		s[v] = true
	}
	return s
}

// genSpec returns a random expression.
func genSpec(r *rand.Rand) cronSpec {
	switch k := r.IntN(10); {
	case k < 2:
		secs := []int64{1, 2, 3, 5, 7, 30, 90, 600, 3600}[r.IntN(9)]
		return cronSpec{expr: "@every " + (time.Duration(secs) * time.Second).String(), every: secs}
	case k == 2:
		return cronSpec{expr: "@hourly", sec: only(60, 0), min: only(60, 0), hour: all(24), dow: all(7)}
	case k == 3:
		return cronSpec{expr: "@daily", sec: only(60, 0), min: only(60, 0), hour: only(24, 0), dow: all(7)}
	}
	c := cronSpec{sec: only(60, 0), min: all(60), hour: all(24), dow: all(7)}
	var fields []string
	sixFields := r.IntN(2) == 0
	if sixFields {
		var f string
		f, c.sec = genField(r, 0, 59, true, func() int { return r.IntN(60) })
		fields = append(fields, f)
	}
	minute := "*"
	if !sixFields || r.IntN(2) == 0 {
		minute, c.min = genField(r, 0, 59, !sixFields, func() int { return r.IntN(60) })
	}
	// Hours near the daylight-saving changes (0-4 local) come often.
	hour := "*"
	if r.IntN(2) == 0 {
		hour, c.hour = genField(r, 0, 23, false, func() int {
			if r.IntN(3) > 0 {
				return r.IntN(5)
			}
			return r.IntN(24)
		})
	}
	dow := "*"
	if r.IntN(4) == 0 {
		dow, c.dow = genField(r, 0, 6, false, func() int { return r.IntN(7) })
	}
	fields = append(fields, minute, hour, "*", "*", dow)
	c.expr = strings.Join(fields, " ")
	return c
}

// The model.

type modelEntry struct {
	spec   cronSpec
	tz     string // its own
	zone   string // the one it is evaluated in
	next   int64
	last   int64
	paused bool
}

type modelGroup struct {
	tz      string
	paused  bool
	entries map[string]*modelEntry
}

// entryState is what the test compares of an entry.
type entryState struct {
	Next, Last int64
	Paused     bool
}

type groupState struct {
	Paused  bool
	Entries map[string]entryState
}

type cronSim struct {
	t      *testing.T
	r      *rand.Rand
	ctx    context.Context
	clk    *clock.Fake
	dir    string
	svc    *core.Service
	groups map[string]*modelGroup
	fires  map[string][]int64 // the ready_at of each fired job, by job type
	log    []string           // what was done, for a failure's message
}

func newCronSim(t *testing.T, seed uint64) *cronSim {
	r := rand.New(rand.NewPCG(seed, 21))
	anchor := cronAnchors[r.IntN(len(cronAnchors))]
	start := anchor.Add(-time.Duration(r.Int64N(int64(3 * time.Hour)))).Truncate(time.Millisecond)
	c := &cronSim{t: t, r: r, ctx: context.Background(), clk: clock.NewFake(start), dir: t.TempDir(),
		groups: map[string]*modelGroup{}, fires: map[string][]int64{}}
	c.start()
	t.Cleanup(func() {
		if c.svc != nil {
			require.NoError(t, c.svc.Close())
		}
	})
	return c
}

func (c *cronSim) start() {
	c.svc = core.Start(c.ctx, core.Options{
		Open: func(ctx context.Context) (core.Store, error) {
			return sqlite.Open(ctx, c.dir, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
		},
		Engine: engine.DefaultConfig(), Clock: c.clk, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(c.t, c.svc.Wait(c.ctx))
}

func (c *cronSim) now() int64 { return c.clk.Now().UnixMilli() }

func (c *cronSim) note(format string, args ...any) {
	c.log = append(c.log, fmt.Sprintf("%s ", c.clk.Now().UTC().Format("01-02T15:04:05.000"))+fmt.Sprintf(format, args...))
}

func (c *cronSim) run(steps int) {
	for range steps {
		due := c.nextDue()
		switch op := c.r.IntN(20); {
		case op < 9 && due != 0:
			c.advanceTo(due)
		case op < 12:
			c.idle()
			c.putGroup()
		case op < 13:
			c.idle()
			c.putEntry()
		case op < 16:
			c.idle()
			c.pause()
		case op < 18:
			c.idle()
			c.delete()
		case op < 19:
			c.restart()
		default:
			c.idle()
		}
		c.settle()
	}
	c.checkJobs()
}

// nextDue is the earliest next occurrence of any entry, paused or not (a
// paused one moves its schedule on), or 0.
func (c *cronSim) nextDue() int64 {
	due := int64(0)
	for _, g := range c.groups {
		for _, e := range g.entries {
			if e.next != 0 && (due == 0 || e.next < due) {
				due = e.next
			}
		}
	}
	return due
}

// idle moves the clock on, short of the next occurrence.
func (c *cronSim) idle() {
	now, due := c.now(), c.nextDue()
	span := int64(2 * time.Hour / time.Millisecond)
	if due != 0 {
		span = due - now
	}
	if span <= 1 || c.r.IntN(3) == 0 {
		return
	}
	c.clk.AdvanceTo(time.UnixMilli(now + c.r.Int64N(span)))
}

// advanceTo moves the clock to an occurrence: what is due there fires.
func (c *cronSim) advanceTo(at int64) {
	c.clk.AdvanceTo(time.UnixMilli(at))
	c.note("advance")
	c.fireDue()
}

// fireDue fires, in the model, every entry that is due now: once, however
// many of its occurrences went by.
func (c *cronSim) fireDue() {
	now := c.now()
	for gname, g := range c.groups {
		for ename, e := range g.entries {
			if e.next == 0 || e.next > now {
				continue
			}
			if !g.paused && !e.paused {
				c.fires[gname+"-"+ename] = append(c.fires[gname+"-"+ename], now)
				e.last = now
			}
			e.next = e.spec.next(now, loadZone(c.t, e.zone))
		}
	}
}

func loadZone(t *testing.T, name string) *time.Location {
	if name == "" {
		return time.Local
	}
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func (c *cronSim) pick(names ...string) string { return names[c.r.IntN(len(names))] }

func (c *cronSim) zone() string { return cronZones[c.r.IntN(len(cronZones))] }

func (c *cronSim) maybePaused() *bool {
	if c.r.IntN(8) != 0 {
		return nil
	}
	p := c.r.IntN(2) == 0
	return &p
}

// entrySpec returns an entry to put: its old schedule again, or a new one.
func (c *cronSim) entrySpec(group, name string, old *modelEntry) (core.CronEntrySpec, cronSpec) {
	spec, tz := genSpec(c.r), ""
	if c.r.IntN(2) == 0 {
		tz = c.pick(cronZones[1:]...)
	}
	if old != nil && c.r.IntN(2) == 0 {
		spec, tz = old.spec, old.tz
	}
	return core.CronEntrySpec{
		Name: name, Expression: spec.expr, Timezone: tz, Paused: c.maybePaused(),
		Job: core.NewJob{Type: group + "-" + name, Queue: "q", Priority: 1, Payload: []byte("{}")},
	}, spec
}

// putEntryModel applies a put entry to the model's group: an unchanged
// schedule keeps its next occurrence, a new or changed one gets the
// first after now; the last occurrence stays; paused nil keeps the state.
func (c *cronSim) putEntryModel(g *modelGroup, es core.CronEntrySpec, spec cronSpec, prev *modelEntry) {
	e := &modelEntry{spec: spec, tz: es.Timezone, zone: cmp.Or(es.Timezone, g.tz)}
	if prev != nil {
		e.next, e.last, e.paused = prev.next, prev.last, prev.paused
	}
	if prev == nil || prev.spec.expr != spec.expr || prev.zone != e.zone {
		e.next = spec.next(c.now(), loadZone(c.t, e.zone))
	}
	if es.Paused != nil {
		e.paused = *es.Paused
	}
	g.entries[es.Name] = e
}

func (c *cronSim) putGroup() {
	name := c.pick("g1", "g2", "g3")
	old := c.groups[name]
	spec := core.CronGroupSpec{Paused: c.maybePaused(), Timezone: c.zone()}
	g := &modelGroup{tz: spec.Timezone, entries: map[string]*modelEntry{}}
	if old != nil {
		g.paused = old.paused
		if c.r.IntN(3) > 0 {
			spec.Timezone, g.tz = old.tz, old.tz
		}
	}
	if spec.Paused != nil {
		g.paused = *spec.Paused
	}
	var specs []cronSpec
	for _, en := range []string{"e1", "e2", "e3"} {
		if c.r.IntN(5) < 2 {
			continue
		}
		var prev *modelEntry
		if old != nil {
			prev = old.entries[en]
		}
		es, s := c.entrySpec(name, en, prev)
		spec.Entries = append(spec.Entries, es)
		specs = append(specs, s)
	}
	_, err := c.svc.PutCronGroup(c.ctx, name, spec)
	require.NoError(c.t, err)
	for i, es := range spec.Entries {
		var prev *modelEntry
		if old != nil {
			prev = old.entries[es.Name]
		}
		c.putEntryModel(g, es, specs[i], prev)
	}
	c.groups[name] = g
	c.note("put group %s tz %q paused %v: %s", name, spec.Timezone, ptrText(spec.Paused), entryText(spec.Entries))
}

func (c *cronSim) putEntry() {
	group, name := c.pick("g1", "g2", "g3"), c.pick("e1", "e2", "e3")
	g := c.groups[group]
	if g == nil {
		g = &modelGroup{entries: map[string]*modelEntry{}}
	}
	es, spec := c.entrySpec(group, name, g.entries[name])
	_, err := c.svc.PutCronEntry(c.ctx, group, es)
	require.NoError(c.t, err)
	c.putEntryModel(g, es, spec, g.entries[name])
	c.groups[group] = g
	c.note("put entry %s/%s", group, entryText([]core.CronEntrySpec{es}))
}

func (c *cronSim) pause() {
	names := slices.Sorted(maps.Keys(c.groups))
	if len(names) == 0 {
		return
	}
	group := c.pick(names...)
	g := c.groups[group]
	paused := c.r.IntN(2) == 0
	if entries := slices.Sorted(maps.Keys(g.entries)); len(entries) > 0 && c.r.IntN(2) == 0 {
		name := c.pick(entries...)
		_, err := c.svc.PatchCronEntry(c.ctx, group, name, paused)
		require.NoError(c.t, err)
		g.entries[name].paused = paused
		c.note("entry %s/%s paused %v", group, name, paused)
		return
	}
	_, err := c.svc.PatchCronGroup(c.ctx, group, paused)
	require.NoError(c.t, err)
	g.paused = paused
	c.note("group %s paused %v", group, paused)
}

func (c *cronSim) delete() {
	names := slices.Sorted(maps.Keys(c.groups))
	if len(names) == 0 {
		return
	}
	group := c.pick(names...)
	g := c.groups[group]
	if entries := slices.Sorted(maps.Keys(g.entries)); len(entries) > 0 && c.r.IntN(2) == 0 {
		name := c.pick(entries...)
		require.NoError(c.t, c.svc.DeleteCronEntry(c.ctx, group, name))
		delete(g.entries, name)
		c.note("delete entry %s/%s", group, name)
		return
	}
	require.NoError(c.t, c.svc.DeleteCronGroup(c.ctx, group))
	delete(c.groups, group)
	c.note("delete group %s", group)
}

// restart stops the service, lets time pass (occurrences may go by), and
// starts it again on the same data: what is due fires once.
func (c *cronSim) restart() {
	c.checkJobs()
	require.NoError(c.t, c.svc.Close())
	c.svc = nil
	if c.r.IntN(2) == 0 {
		c.clk.Advance(time.Duration(c.r.Int64N(int64(20 * time.Minute))))
	}
	c.start()
	c.note("restart")
	c.fireDue()
}

// settle waits until the service agrees with the model (a fire runs on
// the service's own goroutine), then compares the jobs fired.
func (c *cronSim) settle() {
	c.t.Helper()
	want := c.modelState()
	var got map[string]groupState
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = c.serviceState()
		if equalStates(want, got) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	require.Equal(c.t, want, got, "the scheduler left the model at %s (%d); steps:\n%s",
		c.clk.Now().UTC().Format(time.RFC3339Nano), c.now(), strings.Join(c.log, "\n"))
}

// checkJobs compares the jobs fired with the model's (a list of jobs is
// slower than the state: runs check it before restarts and at the end).
func (c *cronSim) checkJobs() {
	c.t.Helper()
	require.Equal(c.t, c.fires, c.firedJobs(), "jobs fired; steps:\n%s", strings.Join(c.log, "\n"))
}

func equalStates(a, b map[string]groupState) bool {
	return maps.EqualFunc(a, b, func(x, y groupState) bool { return x.Paused == y.Paused && maps.Equal(x.Entries, y.Entries) })
}

func (c *cronSim) modelState() map[string]groupState {
	out := map[string]groupState{}
	for name, g := range c.groups {
		gs := groupState{Paused: g.paused, Entries: map[string]entryState{}}
		for en, e := range g.entries {
			gs.Entries[en] = entryState{Next: e.next, Last: e.last, Paused: e.paused}
		}
		out[name] = gs
	}
	return out
}

func (c *cronSim) serviceState() map[string]groupState {
	names, err := c.svc.CronGroupNames(context.Background())
	require.NoError(c.t, err)
	out := map[string]groupState{}
	for _, name := range names {
		g, err := c.svc.CronGroup(context.Background(), name)
		require.NoError(c.t, err)
		gs := groupState{Paused: g.Paused, Entries: map[string]entryState{}}
		for _, e := range g.Entries {
			gs.Entries[e.Name] = entryState{Next: e.NextEnqueueAt, Last: e.LastEnqueueAt, Paused: e.Paused}
		}
		out[name] = gs
	}
	return out
}

// firedJobs returns the ready_at of every job fired, by type, in order.
func (c *cronSim) firedJobs() map[string][]int64 {
	jobs, more, err := c.svc.Jobs(c.ctx, core.Filter{Filter: store.Filter{Queues: []string{"q"}}}, "", store.Asc, 100_000)
	require.NoError(c.t, err)
	require.False(c.t, more)
	out := map[string][]int64{}
	for _, j := range jobs {
		out[j.Type] = append(out[j.Type], j.ReadyAt)
	}
	for _, at := range out {
		slices.Sort(at)
	}
	return out
}

func ptrText(p *bool) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatBool(*p)
}

func entryText(entries []core.CronEntrySpec) string {
	parts := make([]string, 0, len(entries))
	for _, e := range entries {
		parts = append(parts, fmt.Sprintf("%s=%q tz %q paused %s", e.Name, e.Expression, e.Timezone, ptrText(e.Paused)))
	}
	return strings.Join(parts, ", ")
}
