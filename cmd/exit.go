package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zizq/zizq/client"
)

// Exit codes; exitRules says which errors give which.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitNotFound    = 3
	ExitUnreachable = 4
)

// usageError marks a mistake in the command line: a flag, an argument or a
// value the command refuses before it asks the server anything.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// notFoundError marks an answer that means "what you named does not exist"
// although the server's status says otherwise: an enqueue refused with 422
// because a --budget KEY does not exist.
type notFoundError struct{ err error }

func (e notFoundError) Error() string { return e.err.Error() }
func (e notFoundError) Unwrap() error { return e.err }

// exitRule is one line of the table from errors to exit codes.
type exitRule struct {
	code    int
	meaning string
	matches func(error) bool
}

// exitRules is the one place that maps errors to exit codes: the first rule
// that matches wins, and an error no rule matches exits 1. `zizq --help`
// and README.md list it (exitCodesText).
//
// Decisions: a --budget KEY that does not exist fails an enqueue with 3,
// as `budget get KEY` does, since the thing named on the command line is
// missing; `job retry` of a job whose budget was deleted is a refusal of
// the job's state (1). A file that exists without --force (backup, tls) is
// a usage error. Something at --url that is not a zizq server (a web page,
// a proxy's error page, a TLS port asked in plain HTTP) is 4, like no
// server at all: there is no zizq server to talk to there.
var exitRules = []exitRule{
	{ExitOK, "success", func(err error) bool { return err == nil }},
	{ExitUsage, "usage error: unknown command, bad flag, argument or value", isUsage},
	{ExitUnreachable, "no zizq server at --url: unreachable, or something else answers there", isNoServer},
	{ExitNotFound, "not found: no such job, budget or error record (job enqueue --budget too)", isNotFound},
	{ExitFailure, "any other failure: a conflict, a refusal (409, 422), a server error (5xx)", func(error) bool { return true }},
}

// exitCode returns the exit code of err (nil: success).
func exitCode(err error) int {
	for _, r := range exitRules {
		if r.matches(err) {
			return r.code
		}
	}
	return ExitFailure
}

func isUsage(err error) bool {
	var ue usageError
	return errors.As(err, &ue)
}

func isNoServer(err error) bool {
	return client.IsUnreachable(err) || client.IsNotZizq(err)
}

func isNotFound(err error) bool {
	var nf notFoundError
	return errors.As(err, &nf) || client.IsNotFound(err)
}

// exitCodesText lists the exit codes in code order, for `zizq --help` and
// README.md.
func exitCodesText() string {
	var b strings.Builder
	b.WriteString("Exit codes:")
	for code := ExitOK; code <= ExitUnreachable; code++ {
		for _, r := range exitRules {
			if r.code == code {
				fmt.Fprintf(&b, "\n  %d  %s", r.code, r.meaning)
			}
		}
	}
	return b.String()
}
