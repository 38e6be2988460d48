package engine

import (
	"cmp"
	"slices"
	"time"
)

// Alarms are named deadlines kept for a component beside the engine (the
// core's cron scheduler), so that the engine's one timer wakes it too and
// nothing polls. When an alarm comes, the engine removes it and hands its
// name to the function given to OnAlarm, at the end of the operation that
// found it due, still under the engine lock: that function must not block
// or call the engine (hand the names to another goroutine). Alarms are not
// job state: Reset leaves them alone.

// Alarm is a named deadline: At is unix milliseconds, 0 to clear it.
type Alarm struct {
	Name string
	At   int64
}

type alarm struct {
	at   int64 // unix ns
	name string
	idx  int
}

// alarmHeap orders the alarms by time.
type alarmHeap struct {
	items  []*alarm
	byName map[string]*alarm
}

func (h *alarmHeap) less(a, b int) bool { return h.items[a].at < h.items[b].at }
func (h *alarmHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.items[a].idx, h.items[b].idx = a, b
}
func (h *alarmHeap) len() int { return len(h.items) }

func (h *alarmHeap) set(name string, at int64) {
	if a := h.byName[name]; a != nil {
		a.at = at
		fix(h, a.idx)
		return
	}
	if h.byName == nil {
		h.byName = map[string]*alarm{}
	}
	a := &alarm{at: at, name: name, idx: len(h.items)}
	h.byName[name] = a
	h.items = append(h.items, a)
	up(h, a.idx)
}

func (h *alarmHeap) clear(name string) {
	a := h.byName[name]
	if a == nil {
		return
	}
	delete(h.byName, name)
	// The hole's index is taken before the swap, which moves a there: the
	// alarm that fills the hole is the one to sift.
	i, last := a.idx, len(h.items)-1
	h.swap(i, last)
	h.items[last] = nil
	h.items = h.items[:last]
	if i < last {
		fix(h, i)
	}
}

// pop removes and returns the earliest alarm's name.
func (h *alarmHeap) pop() string {
	a := h.items[0]
	h.clear(a.name)
	return a.name
}

// OnAlarm sets the function that receives the names of the alarms that
// came (see Alarm). Set it before the first SetAlarms.
func (e *Engine) OnAlarm(f func(names []string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onAlarm = f
}

// SetAlarms sets or moves alarms by name, or clears those whose At is 0.
// An alarm already due comes at once: its name is handed on before
// SetAlarms returns.
func (e *Engine) SetAlarms(alarms ...Alarm) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	for _, a := range alarms {
		if a.At == 0 {
			e.alarms.clear(a.Name)
			continue
		}
		e.alarms.set(a.Name, a.At*int64(time.Millisecond))
	}
	e.finishOp()
}

// Alarms returns the pending alarms, by time then name (for tests).
func (e *Engine) Alarms() []Alarm {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Alarm, 0, len(e.alarms.items))
	for _, a := range e.alarms.items {
		out = append(out, Alarm{Name: a.name, At: a.at / int64(time.Millisecond)})
	}
	slices.SortFunc(out, func(a, b Alarm) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Name, b.Name)) })
	return out
}

// takeDueAlarms moves the alarms due by vnow to the list handed on at the
// end of the operation.
func (e *Engine) takeDueAlarms() {
	for len(e.alarms.items) > 0 && e.alarms.items[0].at <= e.vnow {
		e.dueAlarms = append(e.dueAlarms, e.alarms.pop())
	}
}

// deliverAlarms hands the alarms that came during the operation on.
func (e *Engine) deliverAlarms() {
	if len(e.dueAlarms) == 0 {
		return
	}
	names := e.dueAlarms
	e.dueAlarms = nil
	if e.onAlarm != nil {
		e.onAlarm(names)
	}
}
