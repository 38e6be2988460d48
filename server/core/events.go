package core

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// The event stream of dashboards (the admin port's /events, docs/API.md
// §The event stream): the subscription hook of the core. One hub per service
// holds the engine's watch while anyone subscribes and passes its pokes on;
// each subscription is one goroutine that pulls what changed, at most once per
// MinInterval while changes flow (less often with many subscriptions:
// interval), reads its windows from the engine, diffs them against what it
// sent and emits events into a bounded buffer. Nothing here ever waits on a
// subscriber: one whose buffer is full loses the events that do not fit and,
// once its buffer has drained, gets a fresh snapshot; one whose buffer stays
// full for StuckAfter is dropped.

// EventOptions tune the event stream; zero values take the defaults.
type EventOptions struct {
	// Heartbeat is how often an idle stream gets a heartbeat (2s).
	Heartbeat time.Duration
	// MinInterval is the least time between two reads of the windows while
	// changes flow (100ms): changes in between are coalesced.
	MinInterval time.Duration
	// Buffer is how many events may wait for the transport (256).
	Buffer int
	// StuckAfter drops a subscription whose buffer stays full this long
	// (30s).
	StuckAfter time.Duration
	// Limit is the window size of a list nobody subscribed to yet (200).
	Limit int
}

func (o EventOptions) withDefaults() EventOptions {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 2 * time.Second
	}
	if o.MinInterval <= 0 {
		o.MinInterval = 100 * time.Millisecond
	}
	if o.Buffer <= 0 {
		o.Buffer = 256
	}
	if o.StuckAfter <= 0 {
		o.StuckAfter = 30 * time.Second
	}
	if o.Limit <= 0 {
		o.Limit = DefaultWindow
	}
	return o
}

// DefaultWindow is the window size of a list until a subscribe says
// otherwise (Zizq's).
const DefaultWindow = 200

// MaxWindow bounds the window a subscribe may ask for, so that one
// subscriber cannot make every read of its windows costly.
const MaxWindow = 5000

// ErrSubscriberStuck ends a subscription whose buffer stayed full.
var ErrSubscriberStuck = errors.New("event subscriber stuck: its buffer stayed full")

// EventKind names an event.
type EventKind uint8

const (
	// EventHeartbeat: nothing but the totals.
	EventHeartbeat EventKind = iota + 1
	// EventSnapshot: the window of every list.
	EventSnapshot
	// EventJobChanged: one job entered or left a window, or finished.
	EventJobChanged
	// EventFound: the answer to a Find.
	EventFound
	// EventBudgetSnapshot: every budget with its live figures.
	EventBudgetSnapshot
	// EventBudgetChanged: one budget's figures or configuration changed.
	EventBudgetChanged
	// EventBudgetRemoved: a budget was deleted.
	EventBudgetRemoved
)

// ChangeStatus is what happened to a job in a job_changed event.
type ChangeStatus uint8

const (
	ChangeReady ChangeStatus = iota + 1
	ChangeReadyRemoved
	ChangeInFlight
	ChangeInFlightRemoved
	ChangeScheduled
	ChangeScheduledRemoved
	ChangeCompleted
	ChangeDead
)

var (
	addedStatus   = [NumLists]ChangeStatus{ChangeReady, ChangeInFlight, ChangeScheduled}
	removedStatus = [NumLists]ChangeStatus{ChangeReadyRemoved, ChangeInFlightRemoved, ChangeScheduledRemoved}
)

// Totals are the jobs in each list (ServerStatus of every frame).
type Totals [NumLists]int

// Event is one message of the stream; which fields are set depends on
// Kind. Jobs carry their payload only in detail mode.
type Event struct {
	Kind    EventKind
	Totals  Totals
	Windows [NumLists]Window // EventSnapshot
	// EventJobChanged.
	ID     string
	Status ChangeStatus
	Job    *store.Job
	// EventFound: the list searched, and the match (Found false: none).
	List     List
	Found    bool
	Position int
	Window   Window
	// EventBudgetSnapshot, EventBudgetChanged (one), EventBudgetRemoved (Key).
	Budgets []BudgetView
	Key     string
}

// Command is what a client asks of its subscription.
type Command struct {
	Kind CommandKind
	// CommandSubscribe.
	List   List
	Anchor Anchor
	Limit  int
	// CommandDetail.
	Detail bool
	// CommandDelete.
	ID string
	// CommandFind.
	Find FindRequest
}

// CommandKind names a command.
type CommandKind uint8

const (
	CommandSubscribe CommandKind = iota + 1
	CommandDetail
	CommandDelete
	CommandFind
)

// hub holds the engine's watch while anyone subscribes.
type hub struct {
	mu      sync.Mutex
	subs    map[*Subscription]struct{}
	stop    func()
	quit    chan struct{}
	details detailCache
	dropped atomic.Int64
	count   atomic.Int64 // len(subs), read without the lock
}

// readsPerInterval is how many subscriptions may read their windows per
// MinInterval while changes flow: past it, each reads less often, so that
// twenty dashboards cost dispatch about what four do (a snapshot of 600
// jobs with payloads is tens of kilobytes of JSON to encode and send).
const readsPerInterval = 4

// interval is the least time between two reads of one subscription's
// windows, with n subscriptions.
func (o EventOptions) interval(n int64) time.Duration {
	return o.MinInterval * time.Duration(max(1, (n+readsPerInterval-1)/readsPerInterval))
}

// EventStats are the event stream's figures (metrics).
type EventStats struct {
	Subscribers int
	// Dropped counts subscriptions ended because they stayed stuck.
	Dropped int64
}

// EventStats returns the event stream's figures.
func (s *Service) EventStats() EventStats {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	return EventStats{Subscribers: len(s.events.subs), Dropped: s.events.dropped.Load()}
}

// Subscribe starts a subscription; its first events are a snapshot of every
// list (head windows) and of the budgets. It ends when ctx does, when
// Close is called or when it is dropped (Err says why).
func (s *Service) Subscribe(ctx context.Context, opts EventOptions) (*Subscription, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	sub := &Subscription{
		s: s, opts: opts, cancel: cancel,
		events: make(chan Event, opts.Buffer),
		poke:   make(chan struct{}, 1),
		cmds:   make(chan Command, 16),
		done:   make(chan struct{}),
	}
	for l := range sub.subs {
		sub.subs[l] = engine.WindowRequest{Anchor: engine.Anchor{Kind: engine.AnchorHead}, Limit: opts.Limit}
	}
	s.events.join(s.engine, sub)
	go sub.run(ctx)
	return sub, nil
}

func (h *hub) join(e *engine.Engine, sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*Subscription]struct{}{}
	}
	h.subs[sub] = struct{}{}
	h.count.Store(int64(len(h.subs)))
	if len(h.subs) > 1 {
		return
	}
	wake, stop := e.Watch()
	h.stop, h.quit = stop, make(chan struct{})
	go h.relay(wake, h.quit)
}

func (h *hub) leave(sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, sub)
	h.count.Store(int64(len(h.subs)))
	if len(h.subs) == 0 && h.stop != nil {
		close(h.quit)
		h.stop()
		h.stop = nil
		h.details = detailCache{}
	}
}

// relay passes the engine's pokes on to every subscription, never waiting.
func (h *hub) relay(wake <-chan struct{}, quit chan struct{}) {
	for {
		select {
		case <-quit:
			return
		case <-wake:
		}
		h.mu.Lock()
		for sub := range h.subs {
			select {
			case sub.poke <- struct{}{}:
			default:
			}
		}
		h.mu.Unlock()
	}
}

// Subscription is one dashboard's stream.
type Subscription struct {
	s      *Service
	opts   EventOptions
	cancel context.CancelFunc
	events chan Event
	poke   chan struct{}
	cmds   chan Command
	done   chan struct{}
	err    error

	// The run goroutine's own.
	subs     [engine.NumLists]engine.WindowRequest
	prev     [engine.NumLists][]string
	inFlight map[string]bool // prev[ListInFlight] as a set
	// queued is prev[ListReady] and prev[ListScheduled] as a set, made
	// when a death asks (nil: not made since they changed).
	queued   map[string]bool
	detail   bool
	cursor   engine.Cursor
	finished []engine.Finished
	budgets  map[string]BudgetView
	totals   Totals
	resync   bool
	fullAt   time.Time // when the buffer was found full (resync pending)
	pulled   time.Time
}

// Events returns the stream; it is closed when the subscription ends.
func (sub *Subscription) Events() <-chan Event { return sub.events }

// Do hands the subscription a command; it waits only while 16 commands
// are already waiting, or until the subscription ends.
func (sub *Subscription) Do(c Command) {
	select {
	case sub.cmds <- c:
	case <-sub.done:
	}
}

// Close ends the subscription and waits for its goroutine.
func (sub *Subscription) Close() {
	sub.cancel()
	<-sub.done
}

// Err says why the subscription ended (nil: closed or cancelled).
func (sub *Subscription) Err() error {
	select {
	case <-sub.done:
		return sub.err
	default:
		return nil
	}
}

func (sub *Subscription) run(ctx context.Context) {
	defer func() {
		sub.s.events.leave(sub)
		close(sub.events)
		close(sub.done)
	}()
	sub.snapshot(ctx)
	heartbeat := time.NewTicker(sub.opts.Heartbeat)
	defer heartbeat.Stop()
	var later *time.Timer
	var laterC <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-heartbeat.C:
			sub.totals = sub.s.totals()
			sub.emit(Event{Kind: EventHeartbeat})
		case c := <-sub.cmds:
			sub.command(ctx, c)
		case <-sub.poke:
			// Coalesce: read at most once per interval.
			if wait := sub.opts.interval(sub.s.events.count.Load()) - time.Since(sub.pulled); wait > 0 {
				if later == nil {
					later = time.NewTimer(wait)
					laterC = later.C
				}
				continue
			}
			sub.update(ctx)
		case <-laterC:
			later, laterC = nil, nil
			sub.update(ctx)
		}
		if sub.resync && !sub.catchUp(ctx) {
			sub.s.events.dropped.Add(1)
			sub.err = ErrSubscriberStuck
			return
		}
		if sub.resync && laterC == nil {
			// Nothing else may come to look at the buffer again.
			later = time.NewTimer(sub.opts.MinInterval)
			laterC = later.C
		}
	}
}

// emit queues an event without waiting; one that does not fit starts a
// resync.
func (sub *Subscription) emit(ev Event) {
	if sub.resync {
		return
	}
	ev.Totals = sub.totals
	select {
	case sub.events <- ev:
	default:
		sub.resync, sub.fullAt = true, time.Now()
	}
}

// catchUp sends the resync's snapshot once the buffer has drained, and
// reports false when it has stayed full too long.
func (sub *Subscription) catchUp(ctx context.Context) bool {
	if len(sub.events) > 0 {
		return time.Since(sub.fullAt) < sub.opts.StuckAfter
	}
	sub.resync = false
	sub.snapshot(ctx)
	return true
}

// snapshot reads every window and the budgets afresh and sends them whole.
func (sub *Subscription) snapshot(ctx context.Context) {
	e := sub.s.engine
	sub.finished = e.Changes(&sub.cursor, sub.finished).Finished[:0] // what is read next is newer
	sub.pulled = time.Now()
	ws := e.Windows(sub.subs)
	sub.totals = totalsOf(ws)
	for l := range ws {
		sub.remember(engine.List(l), ws[l].Jobs)
	}
	sub.fill(ctx, ws[:])
	sub.emit(Event{Kind: EventSnapshot, Windows: coreWindows(ws)})
	views := coreBudgetViews(e.Budgets(true))
	sub.budgets = map[string]BudgetView{}
	for _, v := range views {
		sub.budgets[v.Budget.Key] = v
	}
	sub.emit(Event{Kind: EventBudgetSnapshot, Budgets: views})
}

func totalsOf(ws [engine.NumLists]engine.Window) Totals {
	var t Totals
	for l, w := range ws {
		t[l] = w.Total
	}
	return t
}

// totals reads the lists' sizes.
func (s *Service) totals() Totals {
	var t Totals
	c := s.engine.Totals()
	for l := range t {
		t[l] = c[l]
	}
	return t
}

func (sub *Subscription) remember(l engine.List, jobs []store.Job) {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	sub.prev[l] = ids
	if l != engine.ListInFlight {
		sub.queued = nil
	}
	if l == engine.ListInFlight {
		sub.inFlight = make(map[string]bool, len(ids))
		for _, id := range ids {
			sub.inFlight[id] = true
		}
	}
}

// shownQueued reports whether the subscriber was last shown id as ready or
// scheduled: a job that dies of its start_by dies from there, and says so
// as a job that dies in flight does.
func (sub *Subscription) shownQueued(id string) bool {
	if sub.queued == nil {
		sub.queued = make(map[string]bool, len(sub.prev[engine.ListReady])+len(sub.prev[engine.ListScheduled]))
		for _, l := range []engine.List{engine.ListReady, engine.ListScheduled} {
			for _, shown := range sub.prev[l] {
				sub.queued[shown] = true
			}
		}
	}
	return sub.queued[id]
}

// update reads what changed and sends the differences.
func (sub *Subscription) update(ctx context.Context) {
	e := sub.s.engine
	sub.pulled = time.Now()
	ch := e.Changes(&sub.cursor, sub.finished)
	sub.finished = ch.Finished[:0]
	if sub.resync || !ch.Any() {
		return
	}
	if ch.Patched || ch.Lost {
		// A patch can change any field of a job in a window: send it all.
		sub.snapshot(ctx)
		return
	}
	var evs []Event
	for _, f := range ch.Finished {
		id := f.ID.String()
		if !sub.inFlight[id] && !(f.Dead && sub.shownQueued(id)) {
			continue // never shown: nothing to say
		}
		status := ChangeCompleted
		if f.Dead {
			status = ChangeDead
		}
		evs = append(evs, Event{Kind: EventJobChanged, ID: id, Status: status})
	}
	var reqs [engine.NumLists]engine.WindowRequest
	for l, changed := range ch.Lists {
		if changed {
			reqs[l] = sub.subs[l]
		}
	}
	ws := e.Windows(reqs)
	for l, changed := range ch.Lists {
		if changed {
			sub.totals[l] = ws[l].Total
		}
	}
	for l, changed := range ch.Lists {
		if changed {
			evs = sub.diff(evs, engine.List(l), ws[l].Jobs)
		}
	}
	if len(evs) > maxDiffEvents {
		// Most of the windows changed (a busy server): one snapshot says it
		// in one frame instead of hundreds.
		sub.snapshot(ctx)
		return
	}
	sub.fillAdded(ctx, evs)
	for _, ev := range evs {
		sub.emit(ev)
	}
	if ch.Budgets {
		sub.diffBudgets(coreBudgetViews(e.Budgets(true)))
	}
}

// maxDiffEvents is the most job_changed events one read of the windows
// sends; past it, a snapshot goes instead.
const maxDiffEvents = 64

// diff appends what left the list's window, then what entered it.
func (sub *Subscription) diff(evs []Event, l engine.List, jobs []store.Job) []Event {
	now := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		now[j.ID] = true
	}
	was := make(map[string]bool, len(sub.prev[l]))
	for _, id := range sub.prev[l] {
		was[id] = true
		if !now[id] {
			evs = append(evs, Event{Kind: EventJobChanged, ID: id, Status: removedStatus[l]})
		}
	}
	for i := range jobs {
		if !was[jobs[i].ID] {
			evs = append(evs, Event{Kind: EventJobChanged, ID: jobs[i].ID, Status: addedStatus[l], Job: &jobs[i]})
		}
	}
	sub.remember(l, jobs)
	return evs
}

// fillAdded puts the payloads into the jobs that evs add, in detail mode.
func (sub *Subscription) fillAdded(ctx context.Context, evs []Event) {
	if !sub.detail {
		return
	}
	var jobs []*store.Job
	for _, ev := range evs {
		if ev.Job != nil {
			jobs = append(jobs, ev.Job)
		}
	}
	sub.s.events.details.fill(ctx, sub.s, jobs)
}

func (sub *Subscription) diffBudgets(views []BudgetView) {
	seen := make(map[string]bool, len(views))
	for _, v := range views {
		key := v.Budget.Key
		seen[key] = true
		if old, ok := sub.budgets[key]; ok && sameBudget(old, v) {
			continue
		}
		sub.budgets[key] = v
		sub.emit(Event{Kind: EventBudgetChanged, Budgets: []BudgetView{v}})
	}
	for key := range sub.budgets {
		if !seen[key] {
			delete(sub.budgets, key)
			sub.emit(Event{Kind: EventBudgetRemoved, Key: key})
		}
	}
}

func sameBudget(a, b BudgetView) bool {
	if !a.Budget.Equal(b.Budget) || (a.State == nil) != (b.State == nil) {
		return false
	}
	if a.State == nil {
		return true
	}
	x, y := *a.State, *b.State
	return x.Available == y.Available && x.Capacity == y.Capacity && x.InFlight == y.InFlight &&
		x.Held == y.Held && x.Parked == y.Parked && x.Dispatched == y.Dispatched && x.Expired == y.Expired &&
		samePtr(x.OldestParkedMs, y.OldestParkedMs) && samePtr(x.NextTokenAt, y.NextTokenAt)
}

func samePtr(a, b *int64) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

// command applies a client's command.
func (sub *Subscription) command(ctx context.Context, c Command) {
	switch c.Kind {
	case CommandSubscribe:
		sub.subs[c.List] = engine.WindowRequest{Anchor: engineAnchor(c.Anchor), Limit: min(max(c.Limit, 0), MaxWindow)}
		sub.snapshot(ctx)
	case CommandDetail:
		sub.detail = c.Detail
		sub.snapshot(ctx)
	case CommandDelete:
		// No reply: the job's removal comes as events.
		if err := sub.s.DeleteJob(ctx, c.ID); err != nil && !errors.Is(err, ErrNotFound) {
			sub.s.log.Warn("event stream: delete job failed", "id", c.ID, "err", err)
		}
	case CommandFind:
		f := engineFind(c.Find)
		f.Limit = min(max(f.Limit, 0), MaxWindow)
		found, ok := sub.s.engine.Find(f)
		sub.emit(Event{Kind: EventFound, List: c.Find.List, Found: ok, Position: found.Position, Window: Window(found.Window)})
	}
}

// fill puts the payloads into the jobs of the windows, in detail mode.
func (sub *Subscription) fill(ctx context.Context, ws []engine.Window) {
	if !sub.detail {
		return
	}
	var jobs []*store.Job
	for i := range ws {
		for j := range ws[i].Jobs {
			jobs = append(jobs, &ws[i].Jobs[j])
		}
	}
	sub.s.events.details.fill(ctx, sub.s, jobs)
}

// detailCache keeps the payloads the subscriptions showed last, shared by
// all: they show mostly the same jobs (the heads of the lists), so each
// job's payload is read about once, however many watch, and mostly not
// from the store: a job just enqueued has its payload in the core's cache.
// Fills run one at a time (a subscription waits for another's read rather
// than reading the same rows again). It holds two generations of at most
// detailCacheJobs each.
type detailCache struct {
	mu       sync.Mutex
	cur, old map[string][]byte
}

const detailCacheJobs = 4096

func (c *detailCache) fill(ctx context.Context, s *Service, jobs []*store.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []string
	for _, j := range jobs {
		if p, ok := c.get(j.ID); ok {
			j.Payload = p
		} else if p, ok := s.cache.peek(j.ID); ok {
			j.Payload = p
			c.put(j.ID, p)
		} else {
			missing = append(missing, j.ID)
		}
	}
	if len(missing) == 0 {
		return
	}
	rows, err := s.store.Payloads(ctx, missing)
	if err != nil {
		s.log.Warn("event stream: read payloads", "err", err)
		return
	}
	for _, r := range rows {
		c.put(r.ID, r.Payload)
	}
	for _, j := range jobs {
		if j.Payload == nil {
			j.Payload, _ = c.get(j.ID)
		}
	}
}

func (c *detailCache) get(id string) ([]byte, bool) {
	if p, ok := c.cur[id]; ok {
		return p, true
	}
	p, ok := c.old[id]
	if ok {
		c.put(id, p)
	}
	return p, ok
}

func (c *detailCache) put(id string, p []byte) {
	if c.cur == nil || len(c.cur) >= detailCacheJobs {
		c.old, c.cur = c.cur, make(map[string][]byte, detailCacheJobs)
	}
	c.cur[id] = p
}
