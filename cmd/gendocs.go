package cmd

//go:generate go run ./zizq gendocs --out ..

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// docsDate is the date in the man pages' headers: fixed, so that the
// generated files only change when the commands do.
var docsDate = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Completion scripts written by `zizq gendocs`, under completions/.
var completionFiles = map[string]func(*cobra.Command, io.Writer) error{
	"zizq.bash": func(c *cobra.Command, w io.Writer) error { return c.GenBashCompletionV2(w, true) },
	"zizq.zsh":  func(c *cobra.Command, w io.Writer) error { return c.GenZshCompletion(w) },
	"zizq.fish": func(c *cobra.Command, w io.Writer) error { return c.GenFishCompletion(w, true) },
}

func newGendocsCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:    "gendocs --out DIR",
		Short:  "Write the man pages and shell completion scripts",
		Long:   `Write section-1 man pages for every command to DIR/man and bash, zsh and fish completion scripts to DIR/completions (run by 'go generate ./cmd').`,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return GenerateDocs(out)
		},
	}
	c.Flags().StringVar(&out, "out", ".", "directory that receives man/ and completions/")
	return c
}

// GenerateDocs writes DIR/man/*.1 and DIR/completions/* from a fresh
// command tree, so flags given to the running command cannot leak in.
// Stale man pages are removed.
func GenerateDocs(dir string) error {
	root := NewRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	root.DisableAutoGenTag = true
	manDir := filepath.Join(dir, "man")
	compDir := filepath.Join(dir, "completions")
	for _, d := range []string{manDir, compDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	old, err := filepath.Glob(filepath.Join(manDir, "*.1"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	header := &doc.GenManHeader{Section: "1", Date: &docsDate, Source: "zizq", Manual: "zizq manual"}
	if err := doc.GenManTree(root, header, manDir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	for name, gen := range completionFiles {
		f, err := os.Create(filepath.Join(compDir, name))
		if err != nil {
			return err
		}
		err = gen(root, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("completion %s: %w", name, err)
		}
	}
	return nil
}
