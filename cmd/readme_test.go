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

// sh blocks returns the README's ```sh blocks, in order.
func shBlocks(readme string) []string {
	var blocks []string
	for rest := readme; ; {
		i := strings.Index(rest, "```sh\n")
		if i < 0 {
			return blocks
		}
		rest = rest[i+len("```sh\n"):]
		blocks = append(blocks, rest[:strings.Index(rest, "```")])
	}
}

// commands are the commands of a block, comments left out.
func commands(block string) []string {
	var out []string
	for _, line := range lines(block) {
		if cmd, _, _ := strings.Cut(line, " #"); strings.TrimSpace(cmd) != "" {
			out = append(out, strings.TrimSpace(cmd))
		}
	}
	return out
}

// TestREADME_OpeningRunsOnAFreshMachine checks the README's opening: first
// exactly the two commands a fresh clone needs, the server on the embedded
// store and the tests, both without installing anything; then the
// install, whose PATH line honours GOBIN. No promise of a build time that
// a small machine cannot keep.
func TestREADME_OpeningRunsOnAFreshMachine(t *testing.T) {
	t.Parallel()
	readme := readREADME(t)
	require.Less(t, strings.Count(readme[:strings.Index(readme, "```sh\n")], "\n"), 4, "the commands come first")
	blocks := shBlocks(readme)
	require.GreaterOrEqual(t, len(blocks), 2)
	require.Equal(t, []string{"go run ./cmd/zizq serve", ".ci/run"}, commands(blocks[0]))
	install := commands(blocks[1])
	require.Equal(t, "go install ./cmd/zizq", install[0], "installing on the PATH comes right after")
	require.NotContains(t, readme[:strings.Index(readme, "## ")], "about a minute")

	// The PATH line names the directory go install used, GOBIN or not.
	require.Len(t, install, 2)
	for _, gobin := range []string{"", t.TempDir()} {
		sh := exec.Command("sh", "-c", install[1]+` && printf %s "$PATH"`)
		sh.Env = append(os.Environ(), "GOBIN="+gobin, "PATH=/usr/bin:/bin:"+filepath.Dir(goBinary(t)))
		out, err := sh.CombinedOutput()
		require.NoError(t, err, "%s", out)
		want := gobin
		if want == "" {
			gopath, err := exec.Command("go", "env", "GOPATH").Output()
			require.NoError(t, err)
			want = filepath.Join(strings.TrimSpace(string(gopath)), "bin")
		}
		require.True(t, strings.HasSuffix(string(out), ":"+want), "GOBIN=%q: PATH %s", gobin, out)
	}

	// The install line works.
	bin := t.TempDir()
	cmdInstall := exec.Command("go", "install", "./cmd/zizq")
	cmdInstall.Dir = ".."
	cmdInstall.Env = append(os.Environ(), "GOBIN="+bin)
	out, err := cmdInstall.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(filepath.Join(bin, "zizq"), "--version").Output()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(out), "zizq version "), "%s", out)
}

// goBinary is the path of the go command.
func goBinary(t *testing.T) string {
	p, err := exec.LookPath("go")
	require.NoError(t, err)
	return p
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
