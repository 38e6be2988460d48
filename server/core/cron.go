package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// Cron groups are named sets of entries; each entry enqueues its job
// template at the occurrences of a cron expression in a timezone. The core
// keeps every group in memory (read from the store at start) and answers
// reads from there; a change commits first and is applied after, all under
// cronState.mu, so reads see only what is durable.
//
// Firing rides the engine's one deadline timer: each entry with a next
// occurrence has an engine alarm at it, and the engine hands due alarms to
// the core, which fires them on its own goroutine (cron_fire.go). Every
// running core fires: a lone server's, and in a cluster that of the
// leader's term (a follower runs none).
//
// Lock order: cronState.mu, then Engine.mu (alarms, enqueues, budget
// deletes, reset), then the store writer's; cronState.dueMu is a leaf,
// taken under Engine.mu when alarms are handed on.

// CronGroup is a cron group as the transports render it: entries by name.
type CronGroup struct {
	Name      string
	Paused    bool
	PausedAt  int64
	ResumedAt int64
	// Timezone applies to the entries without one of their own ("" none).
	Timezone string
	Entries  []CronEntry
}

// CronEntry is one entry as the transports render it. Job is its template:
// a validated enqueue request without ReadyAt. NextEnqueueAt is 0 when the
// expression has no future occurrence.
type CronEntry struct {
	Name          string
	Expression    string
	Timezone      string
	Paused        bool
	PausedAt      int64
	ResumedAt     int64
	Job           NewJob
	NextEnqueueAt int64
	LastEnqueueAt int64
}

// CronEntrySpec is an entry to create or replace. Paused nil keeps an
// existing entry's pause state (false for a new one).
type CronEntrySpec struct {
	Name       string
	Expression string
	Timezone   string
	Paused     *bool
	Job        NewJob
}

// CronGroupSpec is a whole group to create or replace (PUT). Paused nil
// keeps an existing group's pause state; Timezone is replaced ("" clears).
type CronGroupSpec struct {
	Paused   *bool
	Timezone string
	Entries  []CronEntrySpec
}

// CronSummary is one group at a glance (for `zizq top`): NextEnqueueAt is
// the earliest occurrence that will enqueue a job (0 if none: every entry
// or the group paused, or no future occurrence), of entry NextEntry.
type CronSummary struct {
	Name          string
	Paused        bool
	Entries       int
	PausedEntries int
	NextEnqueueAt int64
	NextEntry     string
	LastEnqueueAt int64
}

// cronState is the core's cron groups and its firing switch.
type cronState struct {
	mu     sync.Mutex
	groups map[string]*cronGroup
	// armed is set once the start has set every entry's alarm: changes
	// made before then are armed with the rest.
	armed bool

	dueMu sync.Mutex
	due   []string      // names of the alarms that came
	wake  chan struct{} // signalled when due grows
	done  chan struct{} // closed when the firing goroutine ends
}

type cronGroup struct {
	meta    store.CronGroup // Entries unused
	entries map[string]*cronEntry
}

type cronEntry struct {
	row   store.CronEntry
	job   engine.NewJob
	sched schedule
	zone  string // the timezone it is evaluated in ("" local)
}

func newCronState() cronState {
	return cronState{groups: map[string]*cronGroup{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// alarmName names an entry's engine alarm; NUL cannot be in a cron name.
func alarmName(group, entry string) string { return group + "\x00" + entry }

func (c *cronState) lookup(alarm string) (*cronGroup, *cronEntry) {
	group, entry, _ := strings.Cut(alarm, "\x00")
	g := c.groups[group]
	if g == nil {
		return nil, nil
	}
	return g, g.entries[entry]
}

func groupNotFound(name string) error { return NotFound("cron group '%s' not found", name) }

func entryNotFound(group, name string) error {
	return NotFound("cron entry '%s' not found in group '%s'", name, group)
}

// CronGroupNames returns the name of every cron group, sorted.
func (s *Service) CronGroupNames(ctx context.Context) ([]string, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	names := make([]string, 0, len(s.cron.groups))
	for name := range s.cron.groups {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// CronGroup returns one group with its entries.
func (s *Service) CronGroup(ctx context.Context, name string) (CronGroup, error) {
	if err := s.ready(ctx); err != nil {
		return CronGroup{}, err
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	g := s.cron.groups[name]
	if g == nil {
		return CronGroup{}, groupNotFound(name)
	}
	return g.view(), nil
}

// CronEntry returns one entry of a group.
func (s *Service) CronEntry(ctx context.Context, group, name string) (CronEntry, error) {
	if err := s.ready(ctx); err != nil {
		return CronEntry{}, err
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	g := s.cron.groups[group]
	if g == nil || g.entries[name] == nil {
		return CronEntry{}, entryNotFound(group, name)
	}
	return g.entries[name].view(), nil
}

// PutCronGroup creates or replaces a group: entries named in spec are
// created or replaced (an unchanged schedule keeps its next and last
// occurrence), the others are deleted.
func (s *Service) PutCronGroup(ctx context.Context, name string, spec CronGroupSpec) (CronGroup, error) {
	if err := s.ready(ctx); err != nil {
		return CronGroup{}, err
	}
	if _, err := loadTimezone(spec.Timezone); err != nil {
		return CronGroup{}, err
	}
	seen := map[string]bool{}
	for _, e := range spec.Entries {
		if seen[e.Name] {
			return CronGroup{}, Invalid("duplicate cron entry name: %q", e.Name)
		}
		seen[e.Name] = true
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	now := s.nowMs()
	old := s.cron.groups[name]
	g := &cronGroup{meta: store.CronGroup{Name: name, Timezone: spec.Timezone}, entries: map[string]*cronEntry{}}
	if old != nil {
		g.meta.Paused, g.meta.PausedAt, g.meta.ResumedAt = pauseChange(old.meta, spec.Paused, now)
	} else if spec.Paused != nil && *spec.Paused {
		g.meta.Paused, g.meta.PausedAt = true, now
	}
	ops := []store.Op{store.PutCronGroup(g.meta)}
	for i, es := range spec.Entries {
		var prev *cronEntry
		if old != nil {
			prev = old.entries[es.Name]
		}
		e, err := s.newCronEntry(name, spec.Timezone, es, prev, now)
		if err != nil {
			return CronGroup{}, inEntry(CronEntryLabel(i, es.Name), err)
		}
		g.entries[es.Name] = e
		ops = append(ops, store.PutCronEntry(e.row))
	}
	var removed []string
	if old != nil {
		for n := range old.entries {
			if g.entries[n] == nil {
				removed = append(removed, n)
				ops = append(ops, store.DeleteCronEntry(name, n))
			}
		}
	}
	if err := wait(ctx, s.store.Append(ops...)); err != nil {
		return CronGroup{}, err
	}
	s.cron.groups[name] = g
	s.armCron(name, removed, g.entryList()...)
	return g.view(), nil
}

// PatchCronGroup pauses or resumes a group.
func (s *Service) PatchCronGroup(ctx context.Context, name string, paused bool) (CronGroup, error) {
	if err := s.ready(ctx); err != nil {
		return CronGroup{}, err
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	g := s.cron.groups[name]
	if g == nil {
		return CronGroup{}, groupNotFound(name)
	}
	meta := g.meta
	meta.Paused, meta.PausedAt, meta.ResumedAt = pauseChange(g.meta, &paused, s.nowMs())
	if meta.Paused != g.meta.Paused {
		if err := wait(ctx, s.store.Append(store.PutCronGroup(meta))); err != nil {
			return CronGroup{}, err
		}
		g.meta = meta
	}
	return g.view(), nil
}

// DeleteCronGroup deletes a group and its entries.
func (s *Service) DeleteCronGroup(ctx context.Context, name string) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	g := s.cron.groups[name]
	if g == nil {
		return groupNotFound(name)
	}
	if err := wait(ctx, s.store.Append(store.DeleteCronGroup(name))); err != nil {
		return err
	}
	delete(s.cron.groups, name)
	s.armCron(name, slices.Collect(maps.Keys(g.entries)))
	return nil
}

// DeleteCronGroups deletes every group and says how many there were.
func (s *Service) DeleteCronGroups(ctx context.Context) (int, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	n := len(s.cron.groups)
	if n == 0 {
		return 0, nil
	}
	if err := wait(ctx, s.store.Append(store.DeleteCronGroups())); err != nil {
		return 0, err
	}
	s.dropCronLocked()
	return n, nil
}

// dropCronLocked forgets every group and clears their alarms.
func (s *Service) dropCronLocked() {
	var alarms []engine.Alarm
	for name, g := range s.cron.groups {
		for e := range g.entries {
			alarms = append(alarms, engine.Alarm{Name: alarmName(name, e)})
		}
	}
	clear(s.cron.groups)
	if len(alarms) > 0 {
		s.engine.SetAlarms(alarms...)
	}
}

// AddCronEntry adds an entry to a group, creating the group if needed; an
// entry of that name is a conflict.
func (s *Service) AddCronEntry(ctx context.Context, group string, spec CronEntrySpec) (CronEntry, error) {
	return s.writeCronEntry(ctx, group, spec, false)
}

// PutCronEntry creates or replaces an entry of a group, creating the
// group if needed (an unchanged schedule keeps its next and last
// occurrence).
func (s *Service) PutCronEntry(ctx context.Context, group string, spec CronEntrySpec) (CronEntry, error) {
	return s.writeCronEntry(ctx, group, spec, true)
}

func (s *Service) writeCronEntry(ctx context.Context, group string, spec CronEntrySpec, replace bool) (CronEntry, error) {
	if err := s.ready(ctx); err != nil {
		return CronEntry{}, err
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	now := s.nowMs()
	g := s.cron.groups[group]
	var ops []store.Op
	if g == nil {
		g = &cronGroup{meta: store.CronGroup{Name: group}, entries: map[string]*cronEntry{}}
		ops = append(ops, store.PutCronGroup(g.meta))
	}
	prev := g.entries[spec.Name]
	if prev != nil && !replace {
		return CronEntry{}, refuse(KindConflict, "cron entry '%s' already exists in group '%s'", spec.Name, group)
	}
	e, err := s.newCronEntry(group, g.meta.Timezone, spec, prev, now)
	if err != nil {
		return CronEntry{}, err
	}
	ops = append(ops, store.PutCronEntry(e.row))
	if err := wait(ctx, s.store.Append(ops...)); err != nil {
		return CronEntry{}, err
	}
	s.cron.groups[group] = g
	g.entries[spec.Name] = e
	s.armCron(group, nil, e)
	return e.view(), nil
}

// PatchCronEntry pauses or resumes one entry.
func (s *Service) PatchCronEntry(ctx context.Context, group, name string, paused bool) (CronEntry, error) {
	if err := s.ready(ctx); err != nil {
		return CronEntry{}, err
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	g := s.cron.groups[group]
	if g == nil || g.entries[name] == nil {
		return CronEntry{}, entryNotFound(group, name)
	}
	e := g.entries[name]
	row := e.row
	state := store.CronGroup{Paused: row.Paused, PausedAt: row.PausedAt, ResumedAt: row.ResumedAt}
	row.Paused, row.PausedAt, row.ResumedAt = pauseChange(state, &paused, s.nowMs())
	if row.Paused != e.row.Paused {
		if err := wait(ctx, s.store.Append(store.PutCronEntry(row))); err != nil {
			return CronEntry{}, err
		}
		e.row = row
	}
	return e.view(), nil
}

// DeleteCronEntry deletes one entry; its group stays, empty or not.
func (s *Service) DeleteCronEntry(ctx context.Context, group, name string) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	g := s.cron.groups[group]
	if g == nil || g.entries[name] == nil {
		return entryNotFound(group, name)
	}
	if err := wait(ctx, s.store.Append(store.DeleteCronEntry(group, name))); err != nil {
		return err
	}
	delete(g.entries, name)
	s.armCron(group, []string{name})
	return nil
}

// CronSummaries returns every group at a glance, by name.
func (s *Service) CronSummaries(ctx context.Context) ([]CronSummary, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	out := make([]CronSummary, 0, len(s.cron.groups))
	for name, g := range s.cron.groups {
		sum := CronSummary{Name: name, Paused: g.meta.Paused, Entries: len(g.entries)}
		for _, e := range g.entryList() {
			sum.LastEnqueueAt = max(sum.LastEnqueueAt, e.row.LastEnqueueAt)
			if e.row.Paused {
				sum.PausedEntries++
				continue
			}
			if next := e.row.NextEnqueueAt; next != 0 && !g.meta.Paused && (sum.NextEnqueueAt == 0 || next < sum.NextEnqueueAt) {
				sum.NextEnqueueAt, sum.NextEntry = next, e.row.Name
			}
		}
		out = append(out, sum)
	}
	slices.SortFunc(out, func(a, b CronSummary) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// CronEntryLabel names the i-th entry of a group's body (named name, ""
// when it has none) in the errors about it: entries[1] "nightly".
func CronEntryLabel(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("entries[%d]", i)
	}
	return fmt.Sprintf("entries[%d] %q", i, name)
}

// inEntry says which entry of a group a refusal is about; other errors
// pass as they are.
func inEntry(label string, err error) error {
	var ce *Error
	if !errors.As(err, &ce) {
		return err
	}
	return &Error{Kind: ce.Kind, Msg: label + ": " + ce.Msg, Item: -1, err: err}
}

// newCronEntry compiles an entry of group (whose timezone is groupTZ) and
// merges it with the entry it replaces, if any: an unchanged schedule
// (expression and timezone it is evaluated in) keeps its next occurrence,
// a changed one gets the next after now; the last occurrence is kept;
// Paused nil keeps the pause state.
func (s *Service) newCronEntry(group, groupTZ string, spec CronEntrySpec, prev *cronEntry, now int64) (*cronEntry, error) {
	if spec.Job.ReadyAt != nil {
		return nil, Invalid("ready_at is not supported for cron entries")
	}
	zone := cmp.Or(spec.Timezone, groupTZ)
	sched, err := parseSchedule(spec.Expression, zone)
	if err != nil {
		return nil, err
	}
	if err := checkInterval(spec.Expression); err != nil {
		return nil, err
	}
	job := engineJob(spec.Job, engineBindings(spec.Job.Budgets))
	if err := s.checkTemplateBudgets(job); err != nil {
		return nil, err
	}
	tmpl, err := encodeTemplate(job)
	if err != nil {
		return nil, err
	}
	e := &cronEntry{job: job, sched: sched, zone: zone, row: store.CronEntry{
		Group: group, Name: spec.Name, Expression: spec.Expression, Timezone: spec.Timezone, Job: tmpl,
	}}
	if prev == nil {
		e.row.Paused = spec.Paused != nil && *spec.Paused
		e.row.NextEnqueueAt = sched.next(now)
		return e, nil
	}
	e.row.LastEnqueueAt = prev.row.LastEnqueueAt
	e.row.NextEnqueueAt = prev.row.NextEnqueueAt
	if prev.row.Expression != spec.Expression || prev.zone != zone {
		e.row.NextEnqueueAt = sched.next(now)
	}
	state := store.CronGroup{Paused: prev.row.Paused, PausedAt: prev.row.PausedAt, ResumedAt: prev.row.ResumedAt}
	e.row.Paused, e.row.PausedAt, e.row.ResumedAt = pauseChange(state, spec.Paused, now)
	return e, nil
}

// checkTemplateBudgets refuses a template that binds a budget that does
// not exist and that it would not create: every fire of it would be
// skipped. A budget it binds cannot go away while it does (a delete is
// refused), so the check at put holds.
func (s *Service) checkTemplateBudgets(j engine.NewJob) error {
	for _, b := range j.Budgets {
		if b.CreateWith != nil {
			continue
		}
		if _, err := s.engine.Budget(b.Key, false); err != nil {
			return refuse(KindUnprocessable, "budget '%s' does not exist (create it first, or give the binding create_with)", b.Key)
		}
	}
	return nil
}

// pauseChange applies a requested pause state (nil: keep) to the pause
// fields of a group or entry: pausing stamps paused_at, resuming
// resumed_at, asking for the state it has changes nothing.
func pauseChange(cur store.CronGroup, want *bool, now int64) (paused bool, pausedAt, resumedAt int64) {
	paused, pausedAt, resumedAt = cur.Paused, cur.PausedAt, cur.ResumedAt
	switch {
	case want == nil || *want == paused:
	case *want:
		paused, pausedAt = true, now
	default:
		paused, resumedAt = false, now
	}
	return paused, pausedAt, resumedAt
}

// armCron points the alarms of a group's entries at their next
// occurrence, and clears those of the removed ones.
func (s *Service) armCron(group string, removed []string, entries ...*cronEntry) {
	if !s.cron.armed {
		return
	}
	alarms := make([]engine.Alarm, 0, len(removed)+len(entries))
	for _, name := range removed {
		alarms = append(alarms, engine.Alarm{Name: alarmName(group, name)})
	}
	for _, e := range entries {
		alarms = append(alarms, engine.Alarm{Name: alarmName(group, e.row.Name), At: e.row.NextEnqueueAt})
	}
	if len(alarms) > 0 {
		s.engine.SetAlarms(alarms...)
	}
}

// cronReference names a cron entry whose template binds budget key, if
// any (the first by group and entry name).
func (s *Service) cronReference(key string) (group, entry string, ok bool) {
	for _, name := range slices.Sorted(maps.Keys(s.cron.groups)) {
		g := s.cron.groups[name]
		for _, e := range g.entryList() {
			for _, b := range e.job.Budgets {
				if b.Key == key {
					return name, e.row.Name, true
				}
			}
		}
	}
	return "", "", false
}

// loadCron reads every group from the store.
func (s *Service) loadCron(ctx context.Context) (map[string]*cronGroup, error) {
	stored, err := s.store.CronGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("load cron groups: %w", err)
	}
	groups := make(map[string]*cronGroup, len(stored))
	for _, sg := range stored {
		g := &cronGroup{meta: sg, entries: make(map[string]*cronEntry, len(sg.Entries))}
		g.meta.Entries = nil
		for _, row := range sg.Entries {
			e, err := restoreCronEntry(row, sg.Timezone)
			if err != nil {
				return nil, fmt.Errorf("load cron entry '%s' of group '%s': %w", row.Name, sg.Name, err)
			}
			g.entries[row.Name] = e
		}
		groups[sg.Name] = g
	}
	return groups, nil
}

func restoreCronEntry(row store.CronEntry, groupTZ string) (*cronEntry, error) {
	job, err := decodeTemplate(row.Job)
	if err != nil {
		return nil, err
	}
	zone := cmp.Or(row.Timezone, groupTZ)
	sched, err := parseSchedule(row.Expression, zone)
	if err != nil {
		return nil, err
	}
	return &cronEntry{row: row, job: job, sched: sched, zone: zone}, nil
}

// armLocked makes groups the current ones and arms them: every entry's
// alarm is set (a due one fires at once).
func (s *Service) armLocked(groups map[string]*cronGroup) {
	s.cron.groups, s.cron.armed = groups, true
	for name, g := range groups {
		s.armCron(name, nil, g.entryList()...)
	}
}

func (g *cronGroup) entryList() []*cronEntry {
	out := make([]*cronEntry, 0, len(g.entries))
	for _, e := range g.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *cronEntry) int { return cmp.Compare(a.row.Name, b.row.Name) })
	return out
}

func (g *cronGroup) view() CronGroup {
	out := CronGroup{Name: g.meta.Name, Paused: g.meta.Paused, PausedAt: g.meta.PausedAt, ResumedAt: g.meta.ResumedAt,
		Timezone: g.meta.Timezone, Entries: []CronEntry{}}
	for _, e := range g.entryList() {
		out.Entries = append(out.Entries, e.view())
	}
	return out
}

func (e *cronEntry) view() CronEntry {
	r := e.row
	return CronEntry{Name: r.Name, Expression: r.Expression, Timezone: r.Timezone, Paused: r.Paused,
		PausedAt: r.PausedAt, ResumedAt: r.ResumedAt, Job: coreJob(e.job), NextEnqueueAt: r.NextEnqueueAt, LastEnqueueAt: r.LastEnqueueAt}
}
