package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDSN_RelativePath: a relative path makes an absolute file: URI, not
// one whose first directory SQLite would read as the URI's authority
// (`zizq restore --root-dir r2` failed with "invalid uri authority: r2").
func TestDSN_RelativePath(t *testing.T) {
	t.Parallel()
	u := dsn(filepath.Join("r2", "data", FileName), 1<<20, false)
	require.True(t, strings.HasPrefix(u, "file:///"), u)
	require.Contains(t, u, "/r2/data/"+FileName+"?")
}
