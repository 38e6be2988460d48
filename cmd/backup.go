package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/store/archive"
)

// BackupOptions are the flags of `backup`.
type BackupOptions struct {
	Force bool
}

// backupResult is what `backup -o json` prints.
type backupResult struct {
	File          string `json:"file"`
	Bytes         int64  `json:"bytes"`
	DatabaseBytes int64  `json:"database_bytes"`
}

func newBackupCmd(f *Factory) *cobra.Command {
	o := &BackupOptions{}
	admin := &AdminOptions{}
	c := &cobra.Command{
		Use:   "backup FILE",
		Short: "Save a consistent snapshot of a running server's data",
		Long: `Save a consistent snapshot of a running server's jobs and budgets into FILE,
a tar.gz holding zizq-root/data/zizq.db (POST /backup on the admin port,
--admin-url). The server goes on serving meanwhile; the snapshot holds every
write it acknowledged before the backup began.

The archive is checked whole before FILE appears (it is written beside it
and renamed), so FILE is never a partial backup. An existing FILE is kept
unless --force. FILE - writes to standard output. --timeout does not apply:
a large store takes a while.

Restore it with 'zizq restore', with the server stopped.`,
		Example: `  zizq backup /var/backups/zizq-$(date +%F).tar.gz
  zizq backup --admin-url https://db1:8901 --admin-ca-cert ca.pem backup.tar.gz`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := adminClient(admin, client.Options{Timeout: -1, UserAgent: "zizq-cli/" + version})
			if err != nil {
				return err
			}
			res, err := backupTo(c.Context(), cl, args[0], o.Force, f.IO.Out)
			if err != nil {
				return adminError(admin, "POST /backup", err)
			}
			if args[0] == "-" {
				return nil
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, res)
			}
			_, err = fmt.Fprintf(f.IO.Out, "Backed up to %s (%s; database %s).\n", res.File, formatBytes(res.Bytes), formatBytes(res.DatabaseBytes))
			return err
		},
	}
	c.Flags().BoolVar(&o.Force, "force", false, "replace FILE if it exists")
	addAdminFlags(c, admin)
	return c
}

// backupTo downloads a backup into file (or stdout for "-"), checking the
// archive as it goes; a file is written beside its name and renamed once
// whole.
func backupTo(ctx context.Context, cl *client.Client, file string, force bool, stdout io.Writer) (res backupResult, err error) {
	res = backupResult{File: file}
	defer func() { err = namePartFile(err, file) }()
	var out io.Writer = stdout
	var tmp *os.File
	if file != "-" {
		if _, err := os.Stat(file); err == nil && !force {
			return res, usageError{fmt.Errorf("%s exists: choose another name, or --force to replace it", file)}
		}
		tmp, err = os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*.part")
		if err != nil {
			return res, fmt.Errorf("backup: %w", err)
		}
		defer func() {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name()) // gone already once renamed
		}()
		out = tmp
	}
	// The archive is checked while it streams: gzip checksum, tar
	// structure, the database entry whole.
	pr, pw := io.Pipe()
	checked := make(chan error, 1)
	go func() {
		size, err := archive.Check(pr)
		res.DatabaseBytes = size
		_, _ = io.Copy(io.Discard, pr)
		checked <- err
	}()
	n, err := cl.Backup(ctx, io.MultiWriter(out, pw))
	pw.CloseWithError(err)
	if cerr := <-checked; err == nil && cerr != nil {
		err = fmt.Errorf("backup is damaged: %w", cerr)
	}
	res.Bytes = n
	if err != nil {
		return res, err
	}
	if tmp == nil {
		return res, nil
	}
	if err := tmp.Sync(); err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	if d, err := os.Open(filepath.Dir(file)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return res, nil
}

// namePartFile rewrites an error about the file a backup is written to
// before its rename, a hidden name of our own, to name FILE instead: "open
// /x/.b.tar.gz.123.part: permission denied" becomes "cannot write /x/b.tar.gz:
// permission denied".
func namePartFile(err error, file string) error {
	var pe *fs.PathError
	if err == nil || !errors.As(err, &pe) || !strings.HasSuffix(pe.Path, ".part") ||
		filepath.Dir(pe.Path) != filepath.Dir(file) {
		return err
	}
	return fmt.Errorf("backup: cannot write %s: %w", file, pe.Err)
}

// formatBytes writes a size in KiB, MiB or GiB.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
