package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeSection returns the README's section under heading, to the next
// "## " heading.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	readme := readREADME(t)
	i := strings.Index(readme, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "no %q section", heading)
	sec := readme[i+len(heading)+2:]
	if j := strings.Index(sec, "\n## "); j >= 0 {
		sec = sec[:j]
	}
	return sec
}

// fenced returns the body of the first block fenced with ```lang in s.
func fenced(t *testing.T, s, lang string) string {
	t.Helper()
	i := strings.Index(s, "```"+lang+"\n")
	require.GreaterOrEqual(t, i, 0, "no %s block", lang)
	s = s[i+len(lang)+4:]
	return s[:strings.Index(s, "```")]
}

// TestREADME_Tenants runs the commands of the README's "Tenants" section
// against a server, and checks that its Go code is the client package's
// compiled example.
func TestREADME_Tenants(t *testing.T) {
	t.Parallel()
	sec := readmeSection(t, "## Tenants")
	c := newCLI(t)
	var cmdline string
	for _, l := range lines(fenced(t, sec, "console")) {
		switch {
		case strings.HasPrefix(l, "$ #"):
		case strings.HasPrefix(l, "$ "):
			cmdline = strings.TrimPrefix(l, "$ ")
		case strings.HasPrefix(l, "> "):
			cmdline += " " + strings.TrimPrefix(l, "> ")
		}
		if cmdline == "" || strings.HasSuffix(cmdline, "\\") {
			cmdline = strings.TrimSuffix(cmdline, "\\")
			continue
		}
		if i := strings.Index(cmdline, " #"); i >= 0 {
			cmdline = cmdline[:i]
		}
		args := strings.Fields(cmdline)
		require.Equal(t, "zizq", args[0])
		c.ok(args[1:]...)
		cmdline = ""
	}
	// The sub-budgets the section's jobs made.
	require.Contains(t, c.ok("budget", "list", "--parent", "tenants"), "tenants/globex")

	src, err := os.ReadFile(filepath.Join("..", "client", "example_pause_test.go"))
	require.NoError(t, err)
	code := fenced(t, sec, "go")
	require.Contains(t, string(src), code, "the README's worker is the client's example")
}
