// Package migration reads a store's schema migrations, one embedded file
// per version (NNNN_name.sql), for both stores; each applies them its own
// way.
package migration

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one version of a schema.
type Migration struct {
	Version int
	Name    string // the file's name
	SQL     string
}

// Load reads the migrations of fsys (dir "migrations"), sorted by version,
// and checks that versions run 1, 2, 3… without gaps.
func Load(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version number", name)
		}
		body, err := fs.ReadFile(fsys, path.Join("migrations", name))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.Name, i+1)
		}
	}
	return ms, nil
}

// Pending returns the migrations after version current; a current past the
// newest was written by a newer zizq and is refused.
func Pending(ms []Migration, current int) ([]Migration, error) {
	if current > len(ms) {
		return nil, fmt.Errorf("database schema version %d is newer than this zizq supports (%d)", current, len(ms))
	}
	return ms[current:], nil
}
