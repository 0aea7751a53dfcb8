//go:build race

package web_test

// raceEnabled builds the binaries of the tests with the race detector too.
const raceEnabled = true
