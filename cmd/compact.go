package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/client"
)

// compactResult is what `compact -o json` prints.
type compactResult struct {
	Compacted bool `json:"compacted"`
}

func newCompactCmd(f *Factory) *cobra.Command {
	o := &AdminOptions{}
	c := &cobra.Command{
		Use:   "compact",
		Short: "Give the space of deleted jobs back to the file system",
		Long: `Ask a running server, on its admin port (--admin-url), to compact its storage
(POST /compact): every free page of the database goes back to the file system
and the write-ahead log is emptied. Writes wait meanwhile; the server goes on
serving reads. The server also does this by itself, in small steps, as it
runs: compact is for reclaiming space at once, after deleting a large backlog.
--timeout does not apply: a large store takes a while.`,
		Example: `  zizq compact --admin-url http://127.0.0.1:8901`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := adminClient(o, client.Options{Timeout: -1, UserAgent: "zizq-cli/" + version})
			if err != nil {
				return err
			}
			if err := cl.Compact(c.Context()); err != nil {
				return adminError(o, "POST /compact", err)
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, compactResult{Compacted: true})
			}
			_, err = fmt.Fprintln(f.IO.Out, "Storage compacted.")
			return err
		},
	}
	addAdminFlags(c, o)
	return c
}
