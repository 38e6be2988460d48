// Package pgtest gives tests a PostgreSQL database of their own: a new
// schema of the database named by ZIZQ_TEST_DATABASE_URL, dropped when the
// test ends, so that tests run in parallel on one server and see nothing of
// each other. ZIZQ_TEST_STORE=postgres runs the servers of the shared
// harness (server/servertest) on it too. Without the variable PostgreSQL tests are skipped, except
// under CI (CI=true), where a missing database fails them.
package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// EnvURL names the variable holding the test database's URL.
const EnvURL = "ZIZQ_TEST_DATABASE_URL"

// EnvStore names the variable that runs the shared test harnesses
// (server/servertest) on PostgreSQL when it is "postgres"; the tests of
// PostgreSQL itself run whenever EnvURL is set.
const EnvStore = "ZIZQ_TEST_STORE"

// Harness reports whether the shared test harnesses run on PostgreSQL.
func Harness() bool { return os.Getenv(EnvStore) == "postgres" }

// URL returns the test database's URL, or "" when there is none.
func URL() string { return os.Getenv(EnvURL) }

// Require skips t when there is no test database, or fails it under CI.
func Require(t testing.TB) string {
	t.Helper()
	u := URL()
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: CI runs every PostgreSQL test", EnvURL)
		}
		t.Skipf("%s is not set", EnvURL)
	}
	return u
}

// Schema returns the URL of a new, empty schema of the test database,
// dropped when t ends.
func Schema(t testing.TB) string {
	t.Helper()
	return SchemaFor(t, t.Name()+"\x00"+t.TempDir())
}

var (
	mu      sync.Mutex
	created = map[string]bool{}
)

// SchemaFor returns the URL of the schema named after key, created empty
// on the first call for key and dropped when the test of that call ends: a
// restart test that opens the same key again finds its data.
func SchemaFor(t testing.TB, key string) string {
	t.Helper()
	base := Require(t)
	sum := sha256.Sum256([]byte(key))
	name := "t_" + hex.EncodeToString(sum[:12])
	mu.Lock()
	first := !created[name]
	created[name] = true
	mu.Unlock()
	if first {
		exec(t, base, `DROP SCHEMA IF EXISTS `+name+` CASCADE; CREATE SCHEMA `+name)
		t.Cleanup(func() { exec(t, base, `DROP SCHEMA IF EXISTS `+name+` CASCADE`) })
	}
	return WithSchema(t, base, name)
}

// WithSchema returns base with its search_path set to schema.
func WithSchema(t testing.TB, base, schema string) string {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err, "%s must be a postgres:// URL", EnvURL)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func exec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err)
}
