package sqlite

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	driver "modernc.org/sqlite"
)

// TestOpen_PageCacheBoundedInTotal fills a database several times the
// size of the page cache bound, reads all of it on every connection of
// the read pool at once, and adds up what SQLite says each connection's
// cache holds: the writer's (which wrote every page) and the readers'
// together stay within CacheSizeBytes.
//
// Not parallel: SQLite lets the caches of a process lend each other pages
// up to the sum of their sizes, so the databases of other tests open at
// the same time would lend this one theirs.
func TestOpen_PageCacheBoundedInTotal(t *testing.T) {
	// -short (the race run) scales the bound and the data down together.
	total, groups := int64(4<<20), 40
	if testing.Short() {
		total, groups = 1<<20, 10
	}
	b := setup(t, func(o *Options) { o.CacheSizeBytes = total })
	// Payloads large enough that the database, with its row and payload
	// B-trees alone (ready jobs have no index entries), is over 4x the
	// bound, so that the reads below go past the caches.
	pad := strings.Repeat("x", 800)
	for g := range groups {
		ops := make([]store.Op, 0, 1000)
		for i := range 1000 {
			j := job(g*1000 + i)
			j.Payload = fmt.Appendf(nil, `{"pad":%q}`, pad)
			ops = append(ops, store.InsertJob(j))
		}
		b.apply(t, ops...)
	}
	size, _ := b.db.Sizes()
	require.Greater(t, size, 4*total, "the database is larger than the bound")

	used := cacheUsed(t, b.db.w.conn)
	conns := make([]*sql.Conn, b.db.readers)
	for i := range conns {
		c, err := b.db.rdb.Conn(b.ctx)
		require.NoError(t, err)
		defer c.Close()
		conns[i] = c
		var n int
		require.NoError(t, c.QueryRowContext(b.ctx,
			`SELECT count(*) FROM jobs JOIN job_payloads AS p ON p.id = jobs.id WHERE length(p.payload) > 0`).Scan(&n))
		require.Equal(t, groups*1000, n)
	}
	for _, c := range conns {
		used += cacheUsed(t, c)
	}
	// Each page costs a little more than its 4 KiB in the cache.
	require.LessOrEqual(t, used, total*11/10, "page caches together")
	require.Greater(t, used, total/2, "and the caches are used")
}

// cacheUsed is the memory SQLite's page cache of a connection holds.
func cacheUsed(t *testing.T, c *sql.Conn) int64 {
	t.Helper()
	var used int
	require.NoError(t, c.Raw(func(dc any) error {
		var err error
		used, _, err = dc.(driver.DBStatus).Status(driver.DBStatusCacheUsed, false)
		return err
	}))
	return int64(used)
}
