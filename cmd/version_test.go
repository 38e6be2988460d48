package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBinary_OneVersion builds the binary with the -X flags of the
// release build (goreleaser.yaml) and checks that the client and the
// server of that build report the version it stamped.
func TestBinary_OneVersion(t *testing.T) {
	t.Parallel()
	const stamped = "9.8.7-test"
	spec, err := os.ReadFile(filepath.Join("..", "goreleaser.yaml"))
	require.NoError(t, err)
	stamps := regexp.MustCompile(`-X (\S+)=\{\{\s*\.Version\s*\}\}`).FindAllStringSubmatch(string(spec), -1)
	require.Len(t, stamps, 1, "goreleaser.yaml stamps the version into one variable")
	require.Equal(t, "github.com/zizq/zizq/internal/buildinfo.Version", stamps[0][1])

	bin := filepath.Join(t.TempDir(), "zizq")
	build := exec.Command("go", "build", "-ldflags", "-X "+stamps[0][1]+"="+stamped, "-o", bin, "./zizq")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	srv := startServerBin(t, bin, "--root-dir", t.TempDir())
	out, err = exec.Command(bin, "version", "--url", srv.url).Output()
	require.NoError(t, err)
	require.Equal(t, "Client: "+stamped+"\nServer: "+stamped+"\n", string(out))
	out, err = exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	require.Equal(t, "zizq version "+stamped+"\n", string(out))
}
