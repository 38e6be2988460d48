package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/tui"
)

// eventStream is the admin port's GET /events over a WebSocket.
type eventStream struct{ conn *websocket.Conn }

// eventsDialer returns the dial of the event stream of the admin port that
// o names. Its flags are checked now, so that a mistake is a usage error
// before the dashboard starts.
func eventsDialer(o *AdminOptions, userAgent string) (func(context.Context) (tui.Stream, error), error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError{fmt.Errorf("--admin-url: want http://host:port or https://host:port, not %q", o.URL)}
	}
	cfg, err := adminTLS(o)
	if err != nil {
		return nil, err
	}
	ws := *u
	ws.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	ws.Path = strings.TrimSuffix(u.Path, "/") + "/events"
	opts := &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, Proxy: http.ProxyFromEnvironment}},
		HTTPHeader: http.Header{"User-Agent": {userAgent}},
	}
	return func(ctx context.Context) (tui.Stream, error) {
		conn, resp, err := websocket.Dial(ctx, ws.String(), opts)
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("open the event stream: %w", err)
		}
		conn.SetReadLimit(-1) // a snapshot in detail mode can be large
		return eventStream{conn}, nil
	}, nil
}

func (s eventStream) Next(ctx context.Context) (api.AdminFrame, error) {
	var f api.AdminFrame
	_, b, err := s.conn.Read(ctx)
	if err != nil {
		return f, fmt.Errorf("event stream: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("event stream: decode a frame: %w", err)
	}
	return f, nil
}

func (s eventStream) Send(ctx context.Context, f api.ClientFrame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("event stream: encode a frame: %w", err)
	}
	if err := s.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("event stream: %w", err)
	}
	return nil
}

func (s eventStream) Close() error { return s.conn.Close(websocket.StatusNormalClosure, "") }
