package cmd_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/cmd"
)

// TestGenerateDocs_Current fails when the committed man pages and
// completion scripts differ from what the command tree generates.
func TestGenerateDocs_Current(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runZizq(t, "", "gendocs", "--out", dir)
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	const hint = "generated docs are stale: run 'go generate ./cmd' and commit man/ and completions/"
	for _, sub := range []string{"man", "completions"} {
		want := readDir(t, filepath.Join(dir, sub))
		got := readDir(t, filepath.Join("..", sub))
		require.NotEmpty(t, want)
		for name := range want {
			require.Contains(t, got, name, "%s/%s is missing: %s", sub, name, hint)
			require.Equal(t, want[name], got[name], "%s/%s differs: %s", sub, name, hint)
		}
		for name := range got {
			require.Contains(t, want, name, "%s/%s is no longer generated: %s", sub, name, hint)
		}
	}
	// Man pages for every command, with a fixed date.
	page, err := os.ReadFile(filepath.Join(dir, "man", "zizq-budget-put.1"))
	require.NoError(t, err)
	require.Contains(t, string(page), `.TH "ZIZQ-BUDGET-PUT" "1" "Jan 2026" "zizq" "zizq manual"`)
	for _, name := range []string{"zizq.1", "zizq-serve.1", "zizq-job-enqueue.1", "zizq-job-why.1", "zizq-budget-list.1", "zizq-completion-fish.1"} {
		require.FileExists(t, filepath.Join(dir, "man", name))
	}
	require.NoFileExists(t, filepath.Join(dir, "man", "zizq-gendocs.1"), "hidden commands have no page")
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		files[e.Name()] = string(data)
	}
	return files
}
