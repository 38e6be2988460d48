package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/zizq/zizq/devcert"
)

// TLSOptions are the settings shared by the `zizq tls` commands.
type TLSOptions struct {
	RootDir string
	OutDir  string
	Days    int
	Force   bool
}

// Default names and subjects of the files `zizq tls` writes.
const (
	tlsCAName     = "ca"
	tlsServerName = "server"
	tlsClientName = "client"
	tlsCACN       = "zizq development CA"
	tlsServerCN   = "localhost"
	tlsClientCN   = "zizq-client"
)

// tlsDefaultHosts are the names every server certificate is valid for.
var tlsDefaultHosts = []string{"localhost", "127.0.0.1", "::1"}

func newTLSCmd(streams IO) *cobra.Command {
	o := &TLSOptions{}
	c := parentCmd("tls", "Generate development TLS certificates",
		newTLSInitCmd(o, streams),
		newTLSCACmd(o, streams),
		newTLSServerCertCmd(o, streams),
		newTLSClientCertCmd(o, streams),
	)
	c.Long = `Generate PEM certificates for trying TLS and mutual TLS out: a private CA,
a server certificate and client certificates it signs. Private keys are
written with mode 0600. Existing files are kept unless --force is given.

For production, use certificates from your own CA.`
	pf := c.PersistentFlags()
	pf.StringVar(&o.RootDir, "root-dir", "./zizq-root", "root directory of the server (the files go to <root-dir>/tls)")
	withEnv(pf, "root-dir", "ZIZQ_ROOT_DIR")
	pf.StringVar(&o.OutDir, "out-dir", "", "directory of the files (default <root-dir>/tls)")
	pf.IntVar(&o.Days, "days", 365, "days the certificates are valid")
	pf.BoolVar(&o.Force, "force", false, "overwrite existing files")
	return c
}

func (o *TLSOptions) dir() string {
	if o.OutDir != "" {
		return o.OutDir
	}
	return filepath.Join(o.RootDir, "tls")
}

// spec returns a certificate spec valid for --days.
func (o *TLSOptions) spec(cn string, hosts []string) (devcert.Spec, error) {
	if o.Days <= 0 {
		return devcert.Spec{}, usageError{errors.New("--days must be positive")}
	}
	return devcert.Spec{CommonName: cn, Hosts: hosts, Validity: time.Duration(o.Days) * 24 * time.Hour}, nil
}

// pemFile is one file to write.
type pemFile struct {
	path, what string
	data       []byte
	secret     bool
}

// pairFiles returns the files of a certificate and its key named name.
func (o *TLSOptions) pairFiles(name, what string, p devcert.Pair) []pemFile {
	return []pemFile{
		{path: filepath.Join(o.dir(), name+".pem"), what: what + " certificate", data: p.CertPEM},
		{path: filepath.Join(o.dir(), name+"-key.pem"), what: what + " private key", data: p.KeyPEM, secret: true},
	}
}

// checkFree fails if a file of names exists and --force is not given, so
// that nothing is written at all rather than a part.
func (o *TLSOptions) checkFree(names ...string) error {
	if o.Force {
		return nil
	}
	for _, n := range names {
		for _, p := range []string{n + ".pem", n + "-key.pem"} {
			path := filepath.Join(o.dir(), p)
			if _, err := os.Stat(path); err == nil {
				// A usage error, as `backup FILE` of an existing FILE.
				return usageError{fmt.Errorf("%s exists: keep it, or overwrite it with --force", path)}
			}
		}
	}
	return nil
}

// write writes the files atomically and lists them on out.
func (o *TLSOptions) write(out io.Writer, files []pemFile) error {
	if err := os.MkdirAll(o.dir(), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", o.dir(), err)
	}
	for _, f := range files {
		mode := os.FileMode(0o644)
		if f.secret {
			mode = 0o600
		}
		if err := writeFileAtomic(f.path, f.data, mode); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s (%s)\n", f.path, f.what)
	}
	return nil
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it over path, so that a reader never sees half a file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// loadCA reads the CA that `zizq tls ca` wrote to the directory.
func (o *TLSOptions) loadCA() (*devcert.Authority, error) {
	certPath := filepath.Join(o.dir(), tlsCAName+".pem")
	keyPath := filepath.Join(o.dir(), tlsCAName+"-key.pem")
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("read the CA (create one with 'zizq tls ca'): %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read the CA key: %w", err)
	}
	ca, err := devcert.LoadAuthority(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certPath, err)
	}
	return ca, nil
}

// sanFlag declares --san on fs.
func sanFlag(fs *pflag.FlagSet, p *[]string) {
	fs.StringSliceVar(p, "san", nil, "extra host name or IP address the server certificate is valid for, besides "+strings.Join(tlsDefaultHosts, ", ")+" (repeatable)")
}

// serverHosts returns the default hosts plus the extra ones, once each.
func serverHosts(extra []string) []string {
	hosts := append([]string(nil), tlsDefaultHosts...)
	seen := map[string]bool{}
	for _, h := range hosts {
		seen[h] = true
	}
	for _, h := range extra {
		if h = strings.TrimSpace(h); h != "" && !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	return hosts
}
