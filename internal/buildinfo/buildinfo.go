// Package buildinfo holds what a build of zizq stamps into its binary: the
// one version string that the client commands print and the server
// reports on /version.
package buildinfo

// Version is the version of this build, stamped by the release build:
//
//	go build -ldflags "-X github.com/zizq/zizq/internal/buildinfo.Version=0.7.1" ./cmd/zizq
//
// Releases are numbered on the Zizq API line the server implements, so the
// default is the first such level: the official Zizq clients check the
// server's /version and accept 0.7.0 and later.
var Version = "0.7.0"
