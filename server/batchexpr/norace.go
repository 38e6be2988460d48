//go:build !race

package batchexpr

// raceBuild: see race.go.
const raceBuild = false
