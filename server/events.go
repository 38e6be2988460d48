package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/coder/websocket"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

// events answers GET /events: a WebSocket of JSON text frames (docs/API.md
// §The event stream). The core's subscription does the work; this reads client
// frames into commands and writes its events as frames. A dashboard that reads
// nothing for EventWriteTimeout is dropped; one that is only slow is resynced
// by the core (it never slows anything else).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	// The core refuses before the upgrade, so a start answers a plain 503.
	sub, err := s.core.Subscribe(context.WithoutCancel(r.Context()), s.cfg.Events)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer sub.Close()
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	defer conn.CloseNow()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		defer cancel()
		s.readClientFrames(ctx, conn, sub)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			_ = conn.Close(websocket.StatusGoingAway, "server shutting down")
			return
		case ev, ok := <-sub.Events():
			if !ok {
				if errors.Is(sub.Err(), core.ErrSubscriberStuck) {
					s.metrics.eventsDropped.Inc()
					_ = conn.Close(websocket.StatusPolicyViolation, "too slow")
				}
				return
			}
			if !s.writeEvent(ctx, conn, ev) {
				s.metrics.eventsDropped.Inc()
				return
			}
		}
	}
}

func (s *Server) writeEvent(ctx context.Context, conn *websocket.Conn, ev core.Event) bool {
	body, err := json.Marshal(s.adminFrame(ev))
	if err != nil {
		s.log.Error("encode event", "err", err)
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.EventWriteTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, body) == nil
}

// readClientFrames turns client frames into commands until the connection
// ends. Frames it cannot read, or of a type it does not know, are ignored,
// as Zizq ignores them.
func (s *Server) readClientFrames(ctx context.Context, conn *websocket.Conn, sub *core.Subscription) {
	conn.SetReadLimit(64 << 10)
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			continue
		}
		var f api.ClientFrame
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		if c, ok := command(f); ok {
			sub.Do(c)
		}
	}
}

var listNames = map[string]core.List{api.ListReady: core.ListReady, api.ListInFlight: core.ListInFlight, api.ListScheduled: core.ListScheduled}

// command reads a client frame; false when it is not one.
func command(f api.ClientFrame) (core.Command, bool) {
	switch f.Type {
	case api.ClientSubscribe:
		l, ok := listNames[f.List]
		if !ok || f.Anchor == nil || f.Limit == nil {
			return core.Command{}, false
		}
		a, ok := subscribeAnchor(*f.Anchor)
		return core.Command{Kind: core.CommandSubscribe, List: l, Anchor: a, Limit: *f.Limit}, ok
	case api.ClientSetDetailLevel:
		if f.Detail == nil {
			return core.Command{}, false
		}
		return core.Command{Kind: core.CommandDetail, Detail: *f.Detail}, true
	case api.ClientDeleteJob:
		return core.Command{Kind: core.CommandDelete, ID: f.ID}, f.ID != ""
	case api.ClientFind:
		return findCommand(f)
	}
	return core.Command{}, false
}

func subscribeAnchor(a api.ClientAnchor) (core.Anchor, bool) {
	switch a.Kind {
	case api.AnchorHead:
		return core.Anchor{Kind: core.AnchorHead}, true
	case api.AnchorTail:
		return core.Anchor{Kind: core.AnchorTail}, true
	case api.AnchorOffset:
		if a.Offset == nil || *a.Offset < 0 {
			return core.Anchor{}, false
		}
		return core.Anchor{Kind: core.AnchorOffset, Offset: *a.Offset}, true
	case api.AnchorAround:
		fb := map[string]core.AnchorKind{"": core.AnchorNowhere, api.FallbackNowhere: core.AnchorNowhere, api.FallbackHead: core.AnchorHead, api.FallbackTail: core.AnchorTail}
		k, ok := fb[a.Fallback]
		return core.Anchor{Kind: core.AnchorAround, ID: a.ID, Fallback: k}, ok && a.ID != ""
	}
	return core.Anchor{}, false
}

func findCommand(f api.ClientFrame) (core.Command, bool) {
	l, ok := listNames[f.List]
	if !ok || f.Anchor == nil || f.Limit == nil {
		return core.Command{}, false
	}
	dirs := map[string]core.Direction{api.DirectionForward: core.Forward, api.DirectionBackward: core.Backward, api.DirectionLocate: core.Locate}
	dir, ok := dirs[f.Direction]
	if !ok {
		return core.Command{}, false
	}
	req := core.FindRequest{List: l, Direction: dir, Limit: *f.Limit}
	if f.Query != nil {
		req.Queues, req.Types = f.Query.Queues, f.Query.Types
	}
	switch f.Anchor.Kind {
	case api.FindJobID:
		req.ID = f.Anchor.ID
	case api.FindStart:
		if dir == core.Backward {
			req.Direction = core.Locate // nothing before the start: finds nothing
		}
	case api.FindEnd:
		if dir == core.Forward {
			req.Direction = core.Locate
		}
	default:
		return core.Command{}, false
	}
	return core.Command{Kind: core.CommandFind, Find: req}, true
}

// adminFrame is the wire form of an event.
func (s *Server) adminFrame(ev core.Event) api.AdminFrame {
	f := api.AdminFrame{Server: api.ServerStatus{
		Version:        s.cfg.Version,
		UptimeMs:       uint64(max(0, s.clock.Now().Sub(s.started).Milliseconds())),
		Tier:           "pro", // every feature is on
		TotalReady:     ev.Totals[core.ListReady],
		TotalInFlight:  ev.Totals[core.ListInFlight],
		TotalScheduled: ev.Totals[core.ListScheduled],
	}}
	switch ev.Kind {
	case core.EventHeartbeat:
		f.Event = api.EventHeartbeat
	case core.EventSnapshot:
		f.Event = api.EventJobSnapshot
		f.Ready, f.InFlight, f.Scheduled = jobWindow(ev.Windows[core.ListReady]), jobWindow(ev.Windows[core.ListInFlight]), jobWindow(ev.Windows[core.ListScheduled])
	case core.EventJobChanged:
		f.Event, f.ID, f.Status = api.EventJobChanged, ev.ID, changeNames[ev.Status]
		if ev.Job != nil {
			j := adminJob(*ev.Job)
			f.Job = &j
		}
	case core.EventFound:
		f.Event, f.List = api.EventFindResult, listWords[ev.List]
		f.MatchedPosition = &api.FindMatch{Position: ev.Position, Found: ev.Found}
		f.Window = jobWindow(ev.Window)
	case core.EventBudgetSnapshot:
		f.Event = api.EventBudgetSnapshot
		f.Budgets = make([]api.Budget, 0, len(ev.Budgets))
		for _, b := range ev.Budgets {
			f.Budgets = append(f.Budgets, wireBudgetView(b))
		}
	case core.EventBudgetChanged:
		f.Event = api.EventBudgetChanged
		b := wireBudgetView(ev.Budgets[0])
		f.Budget = &b
	case core.EventBudgetRemoved:
		f.Event, f.Key = api.EventBudgetRemoved, ev.Key
	}
	return f
}

var (
	changeNames = map[core.ChangeStatus]string{
		core.ChangeReady: api.ChangeReady, core.ChangeReadyRemoved: api.ChangeReadyRemoved,
		core.ChangeInFlight: api.ChangeInFlight, core.ChangeInFlightRemoved: api.ChangeInFlightRemoved,
		core.ChangeScheduled: api.ChangeScheduled, core.ChangeScheduledRemoved: api.ChangeScheduledRemoved,
		core.ChangeCompleted: api.ChangeCompleted, core.ChangeDead: api.ChangeDead,
	}
	listWords = map[core.List]string{core.ListReady: api.ListReady, core.ListInFlight: api.ListInFlight, core.ListScheduled: api.ListScheduled}
)

func jobWindow(w core.Window) *api.JobWindow {
	out := &api.JobWindow{Items: make([]api.AdminJob, 0, len(w.Jobs)), FirstPosition: w.First, Total: w.Total, ResolvedAnchor: w.Resolved}
	for _, j := range w.Jobs {
		out.Items = append(out.Items, adminJob(j))
	}
	return out
}

// adminJob is a job as the event stream shows it; the payload is there in
// detail mode only (the core fills it then), and with it the job's own
// settings.
func adminJob(j store.Job) api.AdminJob {
	a := api.AdminJob{
		ID: j.ID, Queue: j.Queue, JobType: j.Type, Priority: j.Priority, ReadyAt: j.ReadyAt,
		Attempts: j.Attempts, DequeuedAt: j.DequeuedAt, FailedAt: j.FailedAt,
	}
	for _, b := range j.Budgets {
		a.Budgets = append(a.Budgets, api.Binding{Key: b.Key, Cost: b.Cost})
	}
	if j.Payload == nil {
		return a
	}
	a.Payload, a.RetryLimit = j.Payload, j.RetryLimit
	if b := j.Backoff; b != nil {
		a.Backoff = &api.AdminBackoff{BaseMs: b.BaseMs, Exponent: b.Exponent, JitterMs: b.JitterMs}
	}
	if r := j.Retention; r != nil {
		a.Retention = &api.AdminRetention{CompletedMs: r.CompletedMs, DeadMs: r.DeadMs}
	}
	return a
}
