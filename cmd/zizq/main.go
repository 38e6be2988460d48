// Command zizq is the zizq job-queue server and its command-line client.
package main

import (
	"os"

	"github.com/zizq/zizq/cmd"
	"github.com/zizq/zizq/server/batchexpr"
)

func main() {
	batchexpr.ServeIfWorker() // the server starts this binary again to run batch programs
	os.Exit(cmd.Main())
}
