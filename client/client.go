// Package client is a typed Go client for the zizq HTTP API. It speaks the
// server's own wire types (package api), JSON by default or MessagePack, and
// returns failures as *Error (the server answered with an error status),
// *UnreachableError (it did not answer at all) or *NotZizqError (something
// else answered).
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/zizq/zizq/api"
)

// DefaultURL is where `zizq serve` listens unless told otherwise.
const DefaultURL = "http://127.0.0.1:7890"

// Defaults of Options.
const (
	DefaultTimeout = 30 * time.Second
	DefaultRetries = 2
)

// Options tune a Client. The zero value is sensible.
type Options struct {
	// HTTPClient sends the requests; nil means a client of its own. Pass one
	// to set TLS, proxies or a custom transport. Its Timeout, if any, also
	// bounds take streams, so leave it zero and use Timeout instead.
	HTTPClient *http.Client
	// TLS configures the client's own transport for https:// URLs: the CA
	// to trust and, for mutual TLS, the client certificate (see
	// TLSConfig). nil means the system's roots. Not with HTTPClient.
	TLS *tls.Config
	// Format is the body encoding of requests and responses: api.JSON
	// (default) or api.MsgPack. The take stream follows it (NDJSON or the
	// MessagePack stream).
	Format api.Format
	// Timeout bounds each request, retries included, unless the context
	// ends sooner: 0 means DefaultTimeout, a negative value no limit. Take
	// streams are never bounded by it.
	Timeout time.Duration
	// Retries is how many times a GET is tried again after a connection
	// error or a 5xx answer: 0 means DefaultRetries, a negative value none.
	// Other methods are never retried, since they may have taken effect.
	Retries int
	// UserAgent is sent with every request; empty means "zizq-go-client".
	UserAgent string
}

// Client talks to one zizq server. It is safe for concurrent use.
type Client struct {
	base    string
	format  api.Format
	timeout time.Duration
	hc      *http.Client
	rc      *resty.Client
	agent   string
}

// New returns a client of the server at baseURL (e.g. http://127.0.0.1:7890).
func New(baseURL string, opts Options) (*Client, error) {
	if !strings.Contains(baseURL, "://") {
		// "127.0.0.1:7890" does not even parse, and "localhost:7890" parses
		// with the scheme "localhost": both miss the same thing.
		return nil, fmt.Errorf("invalid server URL %q: it needs a scheme: try http://%s", baseURL, baseURL)
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("invalid server URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: want http://host:port or https://host:port", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("invalid server URL %q: it must not have a query or fragment", baseURL)
	}
	if opts.Format != api.JSON && opts.Format != api.MsgPack {
		return nil, fmt.Errorf("unknown format %d", opts.Format)
	}
	c := &Client{
		base:    strings.TrimRight(u.String(), "/"),
		format:  opts.Format,
		timeout: opts.Timeout,
		hc:      opts.HTTPClient,
		agent:   opts.UserAgent,
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = opts.TLS
		c.hc = &http.Client{Transport: tr}
	} else if opts.TLS != nil {
		return nil, errors.New("set TLS on the transport of Options.HTTPClient, not in Options.TLS")
	}
	if c.agent == "" {
		c.agent = "zizq-go-client"
	}
	retries := opts.Retries
	if retries == 0 {
		retries = DefaultRetries
	}
	c.rc = resty.NewWithClient(c.hc).
		SetLogger(quietLogger{}).
		SetRetryWaitTime(100 * time.Millisecond).
		SetRetryMaxWaitTime(time.Second)
	if retries > 0 {
		c.rc.SetRetryCount(retries).AddRetryCondition(retryable)
	}
	return c, nil
}

// URL returns the server's base URL.
func (c *Client) URL() string { return c.base }

// Format returns the body encoding the client uses.
func (c *Client) Format() api.Format { return c.format }

// retryable allows another try of an idempotent read after a connection
// error or a 5xx answer. Its answer replaces resty's default, which would
// retry every method.
func retryable(r *resty.Response, err error) bool {
	if r == nil || r.Request == nil || r.Request.Method != http.MethodGet {
		return false
	}
	if err != nil {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	return r.StatusCode() >= 500
}

// quietLogger drops resty's own log lines: errors are returned, not logged.
type quietLogger struct{}

func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}

// call is one request: method, path (already escaped) with its query, an
// optional body, and the statuses that count as success.
type call struct {
	method string
	path   string
	query  url.Values
	body   any
}

// do sends a request and decodes a successful answer into out (nil: the
// body is ignored). It returns the status of a successful answer.
func (c *Client) do(ctx context.Context, req call, out any) (int, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	r := c.rc.R().SetContext(ctx).
		SetHeader("Accept", api.ContentType(c.format)).
		SetHeader("User-Agent", c.agent)
	if req.body != nil {
		b, err := api.Marshal(c.format, req.body)
		if err != nil {
			return 0, fmt.Errorf("encode request: %w", err)
		}
		r.SetHeader("Content-Type", api.ContentType(c.format)).SetBody(b)
	}
	target := c.base + req.path
	if len(req.query) > 0 {
		target += "?" + req.query.Encode()
	}
	resp, err := r.Execute(req.method, target)
	if err != nil {
		return 0, c.transportError(ctx, err)
	}
	status := resp.StatusCode()
	if status < 200 || status > 299 {
		return status, c.answerError(status, resp.Header().Get("Content-Type"), resp.Body())
	}
	if out != nil && status != http.StatusNoContent {
		if err := c.decode(status, resp.Header().Get("Content-Type"), resp.Body(), out); err != nil {
			return status, err
		}
	}
	return status, nil
}

// decode reads a successful answer's body in the format its Content-Type
// names; any other content type means it is not a zizq server.
func (c *Client) decode(status int, contentType string, body []byte, out any) error {
	f, ok := answerFormat(contentType)
	if !ok {
		return &NotZizqError{URL: c.base, Status: status, ContentType: contentType}
	}
	if err := api.Unmarshal(f, body, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

// transportError classifies a request that got no answer: the caller's
// cancellation is returned as is, anything else means the server could not
// be reached (in time).
func (c *Client) transportError(ctx context.Context, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded {
		if c.timeout > 0 {
			err = fmt.Errorf("no answer within %s: %w", c.timeout, context.DeadlineExceeded)
		} else {
			err = fmt.Errorf("no answer before the deadline: %w", context.DeadlineExceeded)
		}
	} else {
		err = unwrapURLError(err)
	}
	return &UnreachableError{URL: c.base, Err: err}
}

// unwrapURLError drops *url.Error's "Get \"http://…\":" prefix: the
// UnreachableError names the server already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// seg escapes one path segment (a job ID or a budget key, which may hold
// '/', ':' or spaces).
func seg(s string) string { return url.PathEscape(s) }
