package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"sync"

	"github.com/zizq/zizq/api"
)

// Unlimited is the TakeOptions.Prefetch of a stream that holds any number
// of jobs at once.
const Unlimited = -1

// TakeOptions select what a take stream receives.
type TakeOptions struct {
	// Queues to take from; empty means every queue.
	Queues []string
	// Prefetch is how many unacknowledged jobs the stream may hold: 0
	// means the server's default (1), Unlimited means no limit.
	Prefetch int
	// WorkerID labels the stream in the server's logs.
	WorkerID string
}

// Stream is an open take stream (GET /jobs/take). Jobs arrive in flight:
// ack or fail each one. Closing the stream, or cancelling the context it
// was opened with, returns the jobs it still holds to ready.
type Stream struct {
	body   io.ReadCloser
	frames *api.FrameReader
	once   sync.Once
}

// Take opens a take stream. It is sent outside resty, never retried and
// never timed out: it lasts until ctx ends or Close is called.
func (c *Client) Take(ctx context.Context, o TakeOptions) (*Stream, error) {
	q := api.TakeQuery{Queues: o.Queues, Prefetch: o.Prefetch}
	switch {
	case o.Prefetch == Unlimited:
		q.Prefetch = 0
	case o.Prefetch == 0:
		q.Prefetch = api.DefaultPrefetch
	case o.Prefetch < 0:
		return nil, fmt.Errorf("invalid prefetch %d", o.Prefetch)
	}
	target := c.base + "/jobs/take"
	if v := q.Values(); len(v) > 0 {
		target += "?" + v.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	sf := c.format.Stream()
	req.Header.Set("Accept", api.StreamContentType(sf))
	req.Header.Set("User-Agent", c.agent)
	if o.WorkerID != "" {
		req.Header.Set("Worker-Id", o.WorkerID)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.streamError(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, c.answerError(resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	got, ok := api.TakeFormat(resp.Header.Get("Content-Type"))
	if !ok {
		resp.Body.Close()
		return nil, &NotZizqError{URL: c.base, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type")}
	}
	if got != sf {
		resp.Body.Close()
		return nil, fmt.Errorf("take: unexpected content type %q", resp.Header.Get("Content-Type"))
	}
	return &Stream{body: resp.Body, frames: api.NewFrameReader(resp.Body, sf)}, nil
}

func (c *Client) streamError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &UnreachableError{URL: c.base, Err: unwrapURLError(err)}
}

// Next blocks until the next job arrives, skipping heartbeats. It returns
// io.EOF when the server ends the stream (on shutdown), and the context's
// error once the stream's context is cancelled.
func (s *Stream) Next() (api.Job, error) { return s.frames.Job() }

// All yields the jobs as they arrive until the stream ends; a clean end
// (io.EOF) is not yielded as an error.
func (s *Stream) All() iter.Seq2[api.Job, error] {
	return func(yield func(api.Job, error) bool) {
		for {
			j, err := s.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(j, err) || err != nil {
				return
			}
		}
	}
}

// Close ends the stream; the server returns the jobs it still holds to
// ready.
func (s *Stream) Close() error {
	var err error
	s.once.Do(func() { err = s.body.Close() })
	return err
}
