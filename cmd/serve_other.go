//go:build !unix

package cmd

// ignoreFileSizeSignal: only Unix has SIGXFSZ.
func ignoreFileSizeSignal() {}
