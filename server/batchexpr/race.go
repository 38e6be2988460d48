//go:build race

package batchexpr

// raceBuild: the race detector maps its shadow memory as the heap grows,
// which an address-space limit breaks, so a race build's workers run
// without one (the deadline and the bound on workers still apply).
const raceBuild = true
