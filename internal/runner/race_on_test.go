//go:build race

package runner_test

// The binary under test gets the race detector too when the tests have it.
var buildFlags = []string{"-race"}
