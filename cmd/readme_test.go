package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/cmd"
)

func readREADME(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	require.NoError(t, err)
	return string(b)
}

// TestREADME_OpeningInstallsZizq checks that the README's first commands
// work on a fresh clone: zizq is installed, and the PATH named, before the
// first line that runs it.
func TestREADME_OpeningInstallsZizq(t *testing.T) {
	t.Parallel()
	readme := readREADME(t)
	start := strings.Index(readme, "```sh\n")
	require.GreaterOrEqual(t, start, 0)
	require.Less(t, strings.Count(readme[:start], "\n"), 4, "the commands come first")
	block := readme[start+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	installAt, path, run := -1, -1, -1
	for i, line := range lines(block) {
		switch {
		case strings.HasPrefix(line, "go install ./cmd/zizq"):
			installAt = i
			require.Contains(t, line, "about a minute", "the first build's module download is announced")
		case strings.Contains(line, "$(go env GOPATH)/bin") && strings.HasPrefix(line, "export PATH="):
			path = i
		case strings.HasPrefix(line, "zizq ") && run < 0:
			run = i
		}
	}
	require.GreaterOrEqual(t, installAt, 0, "go install ./cmd/zizq: %s", block)
	require.Greater(t, path, installAt)
	require.Greater(t, run, path, "zizq runs only once it is installed and on the PATH")

	// The install line works, and puts zizq where the README says.
	bin := t.TempDir()
	install := exec.Command("go", "install", "./cmd/zizq")
	install.Dir = ".."
	install.Env = append(os.Environ(), "GOBIN="+bin)
	out, err := install.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(filepath.Join(bin, "zizq"), "--version").Output()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(out), "zizq version "), "%s", out)
}

// TestREADME_ExitCodes checks that the README lists the exit codes that
// `zizq --help` prints, from the one table.
func TestREADME_ExitCodes(t *testing.T) {
	t.Parallel()
	r := runZizq(t, "", "--help")
	require.Equal(t, cmd.ExitOK, r.code)
	i := strings.Index(r.out, "Exit codes:")
	require.GreaterOrEqual(t, i, 0)
	codes := r.out[i:]
	codes = codes[:strings.Index(codes, "\n\n")+1]
	require.Len(t, lines(codes), 6, "a title and five codes")
	require.Contains(t, readREADME(t), "```text\n"+codes+"```\n")
}

// TestREADME_BashCompletion checks that the README says what bash
// completion needs.
func TestREADME_BashCompletion(t *testing.T) {
	t.Parallel()
	require.Contains(t, readREADME(t), "bash completion needs the `bash-completion`\npackage")
}
