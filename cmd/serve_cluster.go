package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/zizq/zizq/internal/memlimit"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/store/postgres"
	"github.com/zizq/zizq/store/sqlite"
)

// serveCluster runs a server of a cluster on PostgreSQL (--database-url):
// no root directory, no lock of it; the database's lease keeps the queue to
// one leader.
func serveCluster(ctx context.Context, o *ServeOptions, opts server.Options, so sqlite.Options, streams IO) error {
	if o.Lease < 300*time.Millisecond {
		return usageError{fmt.Errorf("--lease must be at least 300ms")}
	}
	l, err := listen(o.Host, o.Port)
	if err != nil {
		return err
	}
	scheme := "https"
	if opts.HTTP.TLS == nil {
		scheme = "http"
	}
	advertise, err := advertiseURL(o.AdvertiseURL, scheme, l.Addr())
	if err != nil {
		_ = l.Close()
		return err
	}
	al, err := o.listenAdmin()
	if err != nil {
		_ = l.Close()
		return err
	}
	adminScheme := "https"
	if opts.HTTP.AdminTLS == nil {
		adminScheme = "http"
	}
	var adminURL string // where followers' admin ports send users
	if al != nil {
		if adminURL, err = advertiseURL("", adminScheme, al.Addr()); err != nil {
			_ = l.Close()
			_ = al.Close()
			return err
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go memlimit.Run(ctx, uint64(o.MemoryLimit))
	go memlimit.ReleaseWhenIdle(ctx, memlimit.IdleInterval)
	node, err := server.NewNode(ctx, opts, server.ClusterOptions{
		Join: joinPostgres(postgres.Options{
			URL: o.DatabaseURL, DefaultMode: so.DefaultMode, EnqueueMode: so.EnqueueMode, BatchSize: so.BatchSize, Logger: opts.Logger,
			Archive: sqlite.ArchiveBody{},
		}),
		AdvertiseURL: advertise,
		AdminURL:     adminURL,
		Lease:        o.Lease,
	})
	if err != nil {
		_ = l.Close()
		if al != nil {
			_ = al.Close()
		}
		return err
	}
	opts.Logger.Info("starting", "addr", l.Addr().String(), "advertise", advertise, "version", version)
	go func() {
		select {
		case <-node.Ready():
			// Scripts wait for this line: a leader prints it once it
			// serves every request, a follower at once.
			role := node.Role()
			announce := func() {
				fmt.Fprintf(streams.Out, "Listening on %s://%s (cluster %s, leader %s)\n", scheme, l.Addr(), role.Name(), role.LeaderURL)
				opts.Logger.Info("listening", slog.Group("fields", "api", "primary", "addr", l.Addr().String(), "scheme", scheme))
				if al != nil {
					// The leader's while this node leads; on a follower
					// 503 naming the leader's.
					fmt.Fprintf(streams.Out, "Listening on %s://%s (admin)\n", adminScheme, al.Addr())
					opts.Logger.Info("listening", slog.Group("fields", "api", "admin", "addr", al.Addr().String(), "scheme", adminScheme))
				}
			}
			if srv := node.Leader(); srv != nil {
				srv.OnReady(announce)
			} else {
				announce()
			}
		case <-ctx.Done():
		}
	}()
	if err := node.Serve(ctx, l, al); err != nil {
		return err
	}
	opts.Logger.Info("stopped")
	return nil
}

// joinPostgres joins the cluster on the PostgreSQL database of so.URL, so
// tuning the store of each term.
func joinPostgres(so postgres.Options) func(context.Context, server.Member) (server.ClusterStore, error) {
	return func(ctx context.Context, m server.Member) (server.ClusterStore, error) {
		c, err := postgres.JoinCluster(ctx, so, m.ID, m.URL, m.AdminURL, m.Lease)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// advertiseURL is --advertise-url, checked, or else the listener's address
// (the host name when it listens on every address).
func advertiseURL(flag, scheme string, addr net.Addr) (string, error) {
	if flag != "" {
		u, err := url.Parse(flag)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", usageError{fmt.Errorf("invalid --advertise-url %q: use http://host:port or https://host:port", flag)}
		}
		return flag, nil
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "", fmt.Errorf("advertise url: %w", err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if host, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("advertise url: %w", err)
		}
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", fmt.Errorf("advertise url: port %q", port)
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}
