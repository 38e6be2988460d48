package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/internal/memlimit"
	"github.com/zizq/zizq/internal/rootlock"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// ServeOptions are the settings of `zizq serve`.
type ServeOptions struct {
	RootDir   string
	Host      string
	Port      int
	LogLevel  string
	LogFormat string

	Heartbeat          time.Duration
	GlobalInFlight     int
	RetryLimit         uint32
	BackoffBase        time.Duration
	BackoffExponent    float32
	BackoffJitter      time.Duration
	CompletedRetention time.Duration
	DeadRetention      time.Duration
	ReaperInterval     time.Duration
	DefaultCommitMode  string
	EnqueueCommitMode  string
	CacheSize          int64
	EnqueueBatchSize   int
	CompleteBatchSize  int
	MaxBudgets         int
	MaxBodySize        int64
	MaxTakeConnections int
	PayloadCacheSize   optionalSize // unset: a share of MemoryLimit (payloadCache)
	MemoryLimit        int64
	LicenseKey         string
	LicenseInterval    time.Duration
	// The admin port (serve_admin.go): where, whether, and its own TLS.
	AdminHost                              string
	AdminPort                              int
	NoAdmin                                bool
	Pprof                                  bool
	AdminTLSCert, AdminTLSKey, AdminTLSCCA string
	// TLS of the API: certificate and key (PEM), and the CA of the client
	// certificates that mutual TLS requires.
	TLSCert, TLSKey, TLSClientCA string
	// DatabaseURL, when set, runs the server in a cluster on PostgreSQL
	// (serve_cluster.go) in place of SQLite in RootDir.
	DatabaseURL  string
	AdvertiseURL string
	Lease        time.Duration
	// Logs on disk (serve_log.go).
	LogToDisk   bool
	LogDir      string
	LogRotation string
	LogMaxSize  int64
	LogMaxFiles int
}

func newServeCmd(streams IO) *cobra.Command {
	o := &ServeOptions{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the zizq server",
		Long: `Run the zizq server: the Zizq wire API over HTTP/1.1 and cleartext HTTP/2 on
one port, with jobs and budgets stored in SQLite under <root-dir>/data, and
the admin port (--admin-host, --admin-port; --no-admin to go without): the
live event stream of zizq top, backups and compaction, on loopback by default
and with TLS of its own, since a backup holds every payload.

Every flag and ZIZQ_* variable of Zizq's serve is accepted with its meaning,
so this binary can replace Zizq's in a unit file. With --log-format json,
each listener logs {"msg":"listening","fields":{"api":"primary"|"admin",
"addr":...,"scheme":...}} once it serves every request.

With --database-url the store is PostgreSQL instead, and any number of
servers may share the database: one, elected by a lease in the database,
leads and runs the queue; the others forward the API to it.`,
		Args: cobra.NoArgs,
		PreRunE: func(c *cobra.Command, _ []string) error {
			return applyEnv(c)
		},
		RunE: func(c *cobra.Command, _ []string) error {
			return serveRun(c.Context(), o, streams)
		},
	}
	fs := c.Flags()
	// Defaults are the packages' own: each is written once, there.
	de, dh := engine.DefaultConfig(), server.DefaultConfig()
	type envFlag struct{ name, env string }
	var envs []envFlag
	bind := func(name, env string) { envs = append(envs, envFlag{name, env}) }

	fs.StringVar(&o.RootDir, "root-dir", "./zizq-root", "directory of the server's data (SQLite database in <root-dir>/data; unused with --database-url)")
	bind("root-dir", "ZIZQ_ROOT_DIR")
	fs.StringVar(&o.Host, "host", "127.0.0.1", "address to listen on")
	bind("host", "ZIZQ_HOST")
	fs.IntVar(&o.Port, "port", 7890, "port to listen on (0 picks a free one)")
	bind("port", "ZIZQ_PORT")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: trace, debug, info, warn or error (trace logs as debug)")
	bind("log-level", "ZIZQ_LOG_LEVEL")
	fs.StringVar(&o.LogFormat, "log-format", "text", "log format: text or json (Zizq's pretty and compact log as text)")
	bind("log-format", "ZIZQ_LOG_FORMAT")
	fs.BoolVar(&o.LogToDisk, "log-to-disk", false, "write logs to <root-dir>/log/zizq.log, rotated, instead of standard error")
	bind("log-to-disk", "ZIZQ_LOG_TO_DISK")
	fs.StringVar(&o.LogDir, "log-dir", "", "directory of the log files (implies --log-to-disk)")
	bind("log-dir", "ZIZQ_LOG_DIR")
	fs.StringVar(&o.LogRotation, "log-rotation", rotateDaily, "start a new log file every day or hour, as well as by size: daily, hourly or never")
	bind("log-rotation", "ZIZQ_LOG_ROTATION")
	sizeFlag(fs, &o.LogMaxSize, "log-max-size", 100e6, "size of a log file past which a new one starts (whole MiB, at least 1MiB)")
	bind("log-max-size", "ZIZQ_LOG_MAX_SIZE")
	fs.IntVar(&o.LogMaxFiles, "log-max-files", 10, "rotated log files kept beside the current one (older ones are deleted)")
	bind("log-max-files", "ZIZQ_LOG_MAX_FILES")
	durationFlag(fs, &o.Heartbeat, "heartbeat-interval", dh.HeartbeatInterval, "idle time after which a take stream gets a heartbeat")
	bind("heartbeat-interval", "ZIZQ_HEARTBEAT_INTERVAL")
	fs.IntVarP(&o.GlobalInFlight, "global-in-flight-limit", "l", de.GlobalInFlightLimit, "most jobs in flight across all workers (0: no limit)")
	bind("global-in-flight-limit", "ZIZQ_GLOBAL_IN_FLIGHT_LIMIT")
	fs.Uint32Var(&o.RetryLimit, "default-retry-limit", de.DefaultRetryLimit, "failures a job may have before it dies")
	bind("default-retry-limit", "ZIZQ_DEFAULT_RETRY_LIMIT")
	durationFlag(fs, &o.BackoffBase, "default-backoff-base", msDuration(int64(de.DefaultBackoff.BaseMs)), "base delay of retries")
	bind("default-backoff-base", "ZIZQ_DEFAULT_BACKOFF_BASE")
	fs.Float32Var(&o.BackoffExponent, "default-backoff-exponent", de.DefaultBackoff.Exponent, "exponent of the retry delay")
	bind("default-backoff-exponent", "ZIZQ_DEFAULT_BACKOFF_EXPONENT")
	durationFlag(fs, &o.BackoffJitter, "default-backoff-jitter", msDuration(int64(de.DefaultBackoff.JitterMs)), "random jitter per attempt added to retry delays")
	bind("default-backoff-jitter", "ZIZQ_DEFAULT_BACKOFF_JITTER")
	durationFlag(fs, &o.CompletedRetention, "default-completed-job-retention", msDuration(int64(de.DefaultCompletedRetentionMs)), "how long completed jobs are kept (0: deleted at once)")
	bind("default-completed-job-retention", "ZIZQ_DEFAULT_COMPLETED_JOB_RETENTION")
	durationFlag(fs, &o.DeadRetention, "default-dead-job-retention", msDuration(int64(de.DefaultDeadRetentionMs)), "how long dead jobs are kept")
	bind("default-dead-job-retention", "ZIZQ_DEFAULT_DEAD_JOB_RETENTION")
	durationFlag(fs, &o.ReaperInterval, "reaper-check-interval", 30*time.Second, "accepted for compatibility; expired jobs are purged on their deadline")
	bind("reaper-check-interval", "ZIZQ_REAPER_CHECK_INTERVAL")
	fs.StringVar(&o.DefaultCommitMode, "default-commit-mode", "buffered", "durability of writes: buffered (survives a crash) or fsync (survives power loss)")
	bind("default-commit-mode", "ZIZQ_DEFAULT_COMMIT_MODE")
	fs.StringVar(&o.EnqueueCommitMode, "enqueue-commit-mode", "", "durability of enqueues (default: --default-commit-mode)")
	bind("enqueue-commit-mode", "ZIZQ_ENQUEUE_COMMIT_MODE")
	sizeFlag(fs, &o.CacheSize, "cache-size", sqlite.DefaultCacheSize, "SQLite page cache of all the database connections together (SQLite only)")
	bind("cache-size", "ZIZQ_CACHE_SIZE")
	fs.IntVar(&o.EnqueueBatchSize, "enqueue-batch-size", sqlite.DefaultBatchSize, "most writes committed in one transaction (group commit)")
	bind("enqueue-batch-size", "ZIZQ_ENQUEUE_BATCH_SIZE")
	fs.IntVar(&o.CompleteBatchSize, "complete-batch-size", sqlite.DefaultBatchSize, "accepted for compatibility; see --enqueue-batch-size")
	bind("complete-batch-size", "ZIZQ_COMPLETE_BATCH_SIZE")
	fs.IntVar(&o.MaxBudgets, "max-budgets", de.MaxBudgets, "most budgets the server keeps")
	bind("max-budgets", "ZIZQ_MAX_BUDGETS")
	sizeFlag(fs, &o.MaxBodySize, "max-body-size", dh.MaxBodyBytes, "largest request body")
	bind("max-body-size", "ZIZQ_MAX_BODY_SIZE")
	fs.IntVar(&o.MaxTakeConnections, "max-take-connections", dh.MaxTakeConnections, "most concurrent take streams (503 beyond)")
	bind("max-take-connections", "ZIZQ_MAX_TAKE_CONNECTIONS")
	fs.Var(&o.PayloadCacheSize, "payload-cache-size", "payloads of jobs just enqueued kept for their dispatch, so it does not read them back; when full it keeps the oldest (dispatched next) and admits no more until they go, or one has waited a minute (0: none; auto: an eighth of --memory-limit at most, shrinking to what two thirds of the limit leave beside the queued jobs, none at about a million under the default limit; "+formatSize(core.DefaultPayloadCacheBytes)+", fixed, when the limit is 0)")
	bind("payload-cache-size", "ZIZQ_PAYLOAD_CACHE_SIZE")
	sizeFlag(fs, &o.MemoryLimit, "memory-limit", defaultMemoryLimit, "soft limit of the Go heap: the collector keeps it under this, or under 1.5 x its live data when a backlog needs more (0: the runtime's default)")
	bind("memory-limit", "ZIZQ_MEMORY_LIMIT")
	fs.StringVarP(&o.LicenseKey, "license-key", "k", "", "accepted for compatibility; every feature is enabled")
	bind("license-key", "ZIZQ_LICENSE_KEY")
	durationFlag(fs, &o.LicenseInterval, "license-key-check-interval", 5*time.Second, "accepted for compatibility and unused: no licence key is read")
	bind("license-key-check-interval", "ZIZQ_LICENSE_KEY_CHECK_INTERVAL")
	fs.StringVar(&o.AdminHost, "admin-host", "127.0.0.1", "address of the admin port (event stream of zizq top, backup, compact)")
	bind("admin-host", "ZIZQ_ADMIN_HOST")
	fs.IntVar(&o.AdminPort, "admin-port", 8901, "admin port (0 picks a free one)")
	bind("admin-port", "ZIZQ_ADMIN_PORT")
	fs.BoolVar(&o.NoAdmin, "no-admin", false, "do not open the admin port")
	bind("no-admin", "ZIZQ_NO_ADMIN")
	fs.BoolVar(&o.Pprof, "pprof", false, "serve the Go runtime's profiles on the admin port under /debug/pprof/ (go tool pprof http://ADMIN/debug/pprof/profile)")
	bind("pprof", "ZIZQ_PPROF")
	fs.StringVar(&o.AdminTLSCert, "admin-tls-cert", "", "PEM certificate (chain) of the admin port: serve it over HTTPS, with --admin-tls-key")
	bind("admin-tls-cert", "ZIZQ_ADMIN_TLS_CERT")
	fs.StringVar(&o.AdminTLSKey, "admin-tls-key", "", "PEM private key of --admin-tls-cert")
	bind("admin-tls-key", "ZIZQ_ADMIN_TLS_KEY")
	fs.StringVar(&o.AdminTLSCCA, "admin-tls-client-ca", "", "PEM CA certificates: require admin clients to present a certificate they signed (mutual TLS)")
	bind("admin-tls-client-ca", "ZIZQ_ADMIN_TLS_CLIENT_CA")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "PEM certificate (chain) of the server: serve HTTPS, with --tls-key")
	bind("tls-cert", "ZIZQ_TLS_CERT")
	fs.StringVar(&o.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	bind("tls-key", "ZIZQ_TLS_KEY")
	fs.StringVar(&o.TLSClientCA, "tls-client-ca", "", "PEM CA certificates: require clients to present a certificate they signed (mutual TLS)")
	bind("tls-client-ca", "ZIZQ_TLS_CLIENT_CA")
	fs.StringVar(&o.DatabaseURL, "database-url", "", "PostgreSQL database (postgres://...) of a cluster of servers, in place of SQLite in --root-dir")
	bind("database-url", "ZIZQ_DATABASE_URL")
	fs.StringVar(&o.AdvertiseURL, "advertise-url", "", "URL the other servers of the cluster reach this one at (default: from --host and the port)")
	bind("advertise-url", "ZIZQ_ADVERTISE_URL")
	durationFlag(fs, &o.Lease, "lease", server.DefaultLease, "how long a cluster leader's lease lasts; it renews every third of it")
	bind("lease", "ZIZQ_LEASE")
	for _, e := range envs {
		withEnv(fs, e.name, e.env)
	}
	completeServeFlags(c)
	return c
}

func (o *ServeOptions) logger(w io.Writer) (*slog.Logger, error) {
	return newLogger(w, o.LogLevel, o.LogFormat)
}

// checkDatabaseURL refuses a --database-url that is not PostgreSQL's
// before the driver reads it, whose complaint ("failed to parse as
// keyword/value") would not say what is wrong. It names only the scheme:
// the URL may hold a password.
func checkDatabaseURL(u string) error {
	if u == "" {
		return nil
	}
	scheme, _, ok := strings.Cut(u, "://")
	switch {
	case !ok:
		return usageError{errors.New("invalid --database-url: it must be a postgres:// URL, e.g. postgres://zizq@db.example/zizq")}
	case scheme != "postgres" && scheme != "postgresql":
		return usageError{fmt.Errorf("invalid --database-url: it must be a postgres:// URL, not %s://", scheme)}
	}
	return nil
}

// newLogger is the logger of every command that logs (serve, restore), so
// that they log alike: --log-level and --log-format.
func newLogger(w io.Writer, levelName, format string) (*slog.Logger, error) {
	var level slog.Level
	name := levelName
	if strings.EqualFold(name, "trace") {
		name = "debug"
	}
	if err := level.UnmarshalText([]byte(name)); err != nil {
		return nil, usageError{fmt.Errorf("invalid --log-level %q", levelName)}
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text", "pretty", "compact", "":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, usageError{fmt.Errorf("invalid --log-format %q: use text or json", format)}
}

// storeOptions are the settings of the store, SQLite's or (those that
// apply to it) PostgreSQL's.
func (o *ServeOptions) storeOptions() (sqlite.Options, error) {
	def, err := store.ParseCommitMode(o.DefaultCommitMode)
	if err != nil {
		return sqlite.Options{}, usageError{fmt.Errorf("--default-commit-mode: %w", err)}
	}
	enq := def
	if o.EnqueueCommitMode != "" {
		if enq, err = store.ParseCommitMode(o.EnqueueCommitMode); err != nil {
			return sqlite.Options{}, usageError{fmt.Errorf("--enqueue-commit-mode: %w", err)}
		}
	}
	return sqlite.Options{DefaultMode: def, EnqueueMode: enq, BatchSize: o.EnqueueBatchSize, CacheSizeBytes: o.CacheSize}, nil
}

// serverOptions are the settings of the server but its store, which the
// caller chooses (Options.OpenStore).
func (o *ServeOptions) serverOptions(log *slog.Logger) (server.Options, error) {
	if err := o.checkRanges(); err != nil {
		return server.Options{}, err
	}
	ecfg := engine.DefaultConfig()
	ecfg.GlobalInFlightLimit = o.GlobalInFlight
	ecfg.DefaultRetryLimit = o.RetryLimit
	ecfg.DefaultBackoff = store.Backoff{Exponent: o.BackoffExponent, BaseMs: uint32(o.BackoffBase.Milliseconds()), JitterMs: uint32(o.BackoffJitter.Milliseconds())}
	ecfg.DefaultCompletedRetentionMs = uint64(o.CompletedRetention.Milliseconds())
	ecfg.DefaultDeadRetentionMs = uint64(o.DeadRetention.Milliseconds())
	ecfg.MaxBudgets = o.MaxBudgets
	hcfg := server.DefaultConfig()
	hcfg.HeartbeatInterval = o.Heartbeat
	hcfg.MaxBodyBytes = o.MaxBodySize
	hcfg.MaxTakeConnections = o.MaxTakeConnections
	hcfg.Pprof = o.Pprof
	if hcfg.HeartbeatInterval <= 0 {
		return server.Options{}, usageError{fmt.Errorf("--heartbeat-interval must be positive")}
	}
	var err error
	if hcfg.TLS, err = o.tlsConfig(); err != nil {
		return server.Options{}, err
	}
	if hcfg.AdminTLS, err = o.adminTLSConfig(); err != nil {
		return server.Options{}, err
	}
	return server.Options{
		Engine:            ecfg,
		HTTP:              hcfg,
		PayloadCacheBytes: payloadCache(o.PayloadCacheSize, o.MemoryLimit),
		PayloadCacheHeap:  payloadCacheHeap(o.PayloadCacheSize, o.MemoryLimit),
		Logger:            log,
	}, nil
}

// sqliteStore opens the SQLite store in dir, its transactions reported to
// the server's metrics.
func sqliteStore(dir string, so sqlite.Options) func(context.Context, func(store.CommitInfo)) (store.Store, error) {
	return func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error) {
		o := so
		o.OnCommit = onCommit
		db, err := sqlite.Open(ctx, dir, o)
		if err != nil {
			return nil, err
		}
		return db, nil
	}
}

// checkRanges refuses settings that parse but do not fit where they go.
func (o *ServeOptions) checkRanges() error {
	for _, p := range []struct {
		flag string
		port int
	}{{"--port", o.Port}, {"--admin-port", o.AdminPort}} {
		if p.port < 0 || p.port > 65535 {
			return usageError{fmt.Errorf("invalid %s %d: use 0 to 65535", p.flag, p.port)}
		}
	}
	if err := o.checkLogFlags(); err != nil {
		return err
	}
	if o.Pprof && o.NoAdmin {
		return usageError{errors.New("--pprof serves on the admin port: drop --no-admin")}
	}
	// The engine keeps backoff delays as uint32 milliseconds (about 49 days).
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--default-backoff-base", o.BackoffBase}, {"--default-backoff-jitter", o.BackoffJitter}} {
		if d.v.Milliseconds() > math.MaxUint32 {
			return usageError{fmt.Errorf("%s must be at most %dms", d.flag, uint32(math.MaxUint32))}
		}
	}
	return nil
}

// defaultMemoryLimit is the default floor of the Go heap's soft limit: a
// million queued jobs keep the server within 200 MiB.
const defaultMemoryLimit = 144 << 20

// payloadCacheShare is the part of --memory-limit that the payload cache
// takes at most when --payload-cache-size is not given: a drain reads from
// memory the payloads of as many jobs as the heap can spare. It gets less
// as the engine's jobs fill the heap (payloadCacheHeap).
const payloadCacheShare = 8

// payloadCache maps --payload-cache-size to the server's option, where 0
// means the default and a negative bound means none. Not given, it is a
// payloadCacheShare-th of the memory limit, or the core's default when
// the limit is the runtime's (none).
func payloadCache(size optionalSize, memoryLimit int64) int64 {
	switch {
	case !size.Given && memoryLimit > 0:
		return max(memoryLimit/payloadCacheShare, 1)
	case !size.Given:
		return 0
	case size.N == 0:
		return -1
	}
	return size.N
}

// payloadCacheHeap is the live heap the payload cache shares with the
// engine's jobs when --payload-cache-size is not given: the part of
// --memory-limit under which the collector keeps the limit where it is
// (memlimit.Headroom). So a backlog takes the cache's room rather than
// growing the heap by it: at a million queued jobs there is none left.
// Given a size, or with no limit, the cache's bound is fixed (0).
func payloadCacheHeap(size optionalSize, memoryLimit int64) int64 {
	if size.Given || memoryLimit <= 0 {
		return 0
	}
	return int64(float64(memoryLimit) / memlimit.Headroom)
}

func serveRun(ctx context.Context, o *ServeOptions, streams IO) error {
	// Settings first, the log file after: a refused setting writes nothing.
	so, err := o.storeOptions()
	if err != nil {
		return err
	}
	opts, err := o.serverOptions(slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	if err := checkDatabaseURL(o.DatabaseURL); err != nil {
		return err
	}
	if _, err := o.logger(io.Discard); err != nil {
		return err
	}
	logw, closeLog, err := o.logWriter(streams.Err)
	if err != nil {
		return err
	}
	defer closeLog()
	log, _ := o.logger(logw)
	opts.Logger, so.Logger = log, log
	ignoreFileSizeSignal()
	if o.DatabaseURL != "" {
		return serveCluster(ctx, o, opts, so, streams)
	}
	// One server per root: two would dispatch every job twice. The lock
	// comes before the port, so a refused server never listened.
	lock, err := rootlock.Acquire(o.RootDir)
	if err != nil {
		return err
	}
	defer lock.Release()
	// The port before the store: a port that cannot be had stops the start
	// before anything opens.
	l, err := listen(o.Host, o.Port)
	if err != nil {
		return err
	}
	al, err := o.listenAdmin()
	if err != nil {
		_ = l.Close()
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go memlimit.Run(ctx, uint64(o.MemoryLimit))
	go memlimit.ReleaseWhenIdle(ctx, memlimit.IdleInterval)
	// The store opens and the engine is rebuilt in the background: /health
	// answers meanwhile, /ready once it is done.
	opts.OpenStore = sqliteStore(filepath.Join(o.RootDir, "data"), so)
	srv := server.Start(ctx, opts)
	defer srv.CloseStore()
	log.Info("starting", "addr", l.Addr().String(), "root", o.RootDir, "version", version)
	announce(srv, log, streams.Out, "primary", l, opts.HTTP.TLS != nil)
	if al != nil {
		announce(srv, log, streams.Out, "admin", al, opts.HTTP.AdminTLS != nil)
	}
	if err := serveBoth(ctx, srv, l, al); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// announce says where a listener serves once it serves every request:
// "Listening on URL (api)" on standard output, and Zizq's log line
// ("listening", with fields.api, fields.addr and fields.scheme), which the
// official clients' test harness waits for.
func announce(srv *server.Server, log *slog.Logger, out io.Writer, api string, l net.Listener, tls bool) {
	addr := l.Addr().String()
	scheme := "https"
	if !tls {
		scheme = "http"
		if host, _, _ := net.SplitHostPort(addr); !isLoopback(host) {
			log.Warn("listening on a non-loopback address without TLS: anyone who can reach it can read and change every job", "api", api, "addr", addr)
		}
	}
	srv.OnReady(func() {
		fmt.Fprintf(out, "Listening on %s://%s (%s)\n", scheme, addr, api)
		log.Info("listening", slog.Group("fields", "api", api, "addr", addr, "scheme", scheme))
	})
}

// serveBoth serves the API on l and the admin port on al (nil: none) until
// ctx ends; either failing stops both.
func serveBoth(ctx context.Context, srv *server.Server, l, al net.Listener) error {
	if al == nil {
		return srv.Serve(ctx, l)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	adminErr := make(chan error, 1)
	go func() {
		err := srv.ServeAdmin(ctx, al)
		cancel()
		adminErr <- err
	}()
	err := srv.Serve(ctx, l)
	cancel()
	if aerr := <-adminErr; err == nil {
		err = aerr
	}
	return err
}

// listen opens the API port. Its error names the address once: net says
// "listen tcp 127.0.0.1:7890: bind: address already in use".
func listen(host string, port int) (net.Listener, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err == nil {
		return l, nil
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		err = se.Err
	}
	return nil, fmt.Errorf("listen on %s: %w", addr, err)
}

func isLoopback(host string) bool {
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// msDuration turns the engine's milliseconds into a flag's duration.
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
