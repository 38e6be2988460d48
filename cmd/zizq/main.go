// Command zizq is the zizq job-queue server and its command-line client.
package main

import (
	"os"

	"github.com/zizq/zizq/cmd"
)

func main() { os.Exit(cmd.Main()) }
