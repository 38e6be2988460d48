package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
		if err != nil {
			return nil, dialError(o.URL, resp, err)
		}
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		conn.SetReadLimit(-1) // a snapshot in detail mode can be large
		return eventStream{conn}, nil
	}, nil
}

// dialError says why the event stream could not be opened: the server's
// own reason when it refused the upgrade (a follower names the leader's
// admin port), or that --admin-url is not an admin port when it answered
// 404.
func dialError(adminURL string, resp *http.Response, err error) error {
	if resp == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return fmt.Errorf("open the event stream: %w", err)
	}
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		_ = resp.Body.Close()
	}
	if resp.StatusCode == http.StatusNotFound {
		return notAdminPort(adminURL, "GET /events")
	}
	var e api.Error
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return fmt.Errorf("open the event stream: %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), e.Error)
	}
	return fmt.Errorf("open the event stream: %w", err)
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
