// Command riverbench measures River (riverqueue/river) on a PostgreSQL
// database the way `zizq bench --scenario drain` measures zizq: jobs
// inserted up front in bulks by concurrent producers, then drained by
// workers that do nothing. It is a module of its own so that River stays
// out of zizq's. See BENCHMARKS.md for the side-by-side run.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// benchArgs is the job: a payload of the size zizq bench sends.
type benchArgs struct {
	N   int    `json:"n"`
	Pad string `json:"pad"`
}

func (benchArgs) Kind() string { return "bench" }

// benchWorker does nothing but count.
type benchWorker struct {
	river.WorkerDefaults[benchArgs]
	done *atomic.Int64
}

func (w *benchWorker) Work(context.Context, *river.Job[benchArgs]) error {
	w.done.Add(1)
	return nil
}

func main() {
	url := flag.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL database (River's tables are made in it)")
	jobs := flag.Int("jobs", 100000, "jobs inserted, then drained")
	bulk := flag.Int("bulk", 100, "jobs of one InsertManyFast")
	producers := flag.Int("producers", 8, "concurrent inserters")
	workers := flag.Int("workers", 2000, "River's MaxWorkers of the queue (it fetches at most this many jobs at a time)")
	cooldown := flag.Duration("fetch-cooldown", 100*time.Millisecond, "River's FetchCooldown (its default 100ms; at least 1ms)")
	payload := flag.Int("payload", 128, "bytes of padding in each job's arguments")
	flag.Parse()
	if err := run(context.Background(), *url, *jobs, *bulk, *producers, *workers, *payload, *cooldown); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, url string, jobs, bulk, producers, workers, payload int, cooldown time.Duration) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := pool.Exec(ctx, `TRUNCATE river_job`); err != nil {
		return fmt.Errorf("empty river_job: %w", err)
	}
	var done atomic.Int64
	ws := river.NewWorkers()
	river.AddWorker(ws, &benchWorker{done: &done})
	client, err := river.NewClient(driver, &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:       ws,
		FetchCooldown: cooldown,
	})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}

	pad := strings.Repeat("x", payload)
	start := time.Now()
	if err := insert(ctx, client, jobs, bulk, producers, pad); err != nil {
		return err
	}
	enqueue := time.Since(start)

	start = time.Now()
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	for done.Load() < int64(jobs) {
		time.Sleep(5 * time.Millisecond)
	}
	// Stop waits for the completer to record every completion.
	if err := client.Stop(ctx); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	drain := time.Since(start)
	fmt.Printf("river %d jobs, bulk %d, producers %d, workers %d, fetch cooldown %s, payload %d B\n", jobs, bulk, producers, workers, cooldown, payload)
	fmt.Printf("enqueue (bulk)  %8.0f jobs/s\n", float64(jobs)/enqueue.Seconds())
	fmt.Printf("drain           %8.0f jobs/s\n", float64(jobs)/drain.Seconds())
	return nil
}

// insert inserts jobs in bulks from concurrent producers.
func insert(ctx context.Context, client *river.Client[pgx.Tx], jobs, bulk, producers int, pad string) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				first := int(next.Add(int64(bulk))) - bulk
				if first >= jobs {
					return
				}
				n := min(bulk, jobs-first)
				params := make([]river.InsertManyParams, n)
				for i := range params {
					params[i] = river.InsertManyParams{Args: benchArgs{N: first + i, Pad: pad}}
				}
				if _, err := client.InsertManyFast(ctx, params); err != nil {
					errs <- fmt.Errorf("insert: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
