package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// subscribers are dashboards on the admin port's event stream, in detail
// mode, reading every frame while a scenario runs: what they cost the
// dispatch of the others is the measure (--event-subscribers).
type subscribers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	frames atomic.Int64
	mu     sync.Mutex
	err    error
}

// startSubscribers connects n subscribers to the admin port at adminURL and
// waits until each has its first snapshot.
func startSubscribers(ctx context.Context, adminURL string, n int) (*subscribers, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &subscribers{cancel: cancel}
	url := strings.Replace(adminURL, "http", "ws", 1) + "/events"
	ready := make(chan error, n)
	for range n {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.run(ctx, url, ready)
		}()
	}
	for range n {
		if err := <-ready; err != nil {
			s.stop()
			return nil, fmt.Errorf("event subscriber: %w", err)
		}
	}
	return s, nil
}

func (s *subscribers) run(ctx context.Context, url string, ready chan<- error) {
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		ready <- err
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	detail, _ := json.Marshal(map[string]any{"type": "set_detail_level", "detail": true})
	if err := c.Write(ctx, websocket.MessageText, detail); err != nil {
		ready <- err
		return
	}
	first := true
	for {
		_, _, err := c.Read(ctx)
		if err != nil {
			if first {
				ready <- err
			} else if ctx.Err() == nil {
				s.fail(err)
			}
			return
		}
		s.frames.Add(1)
		if first {
			first = false
			ready <- nil
		}
	}
}

func (s *subscribers) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = fmt.Errorf("event subscriber: %w", err)
	}
}

// stop disconnects them and returns the frames they read and the first
// failure of one.
func (s *subscribers) stop() (int64, error) {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frames.Load(), s.err
}
