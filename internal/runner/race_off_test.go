//go:build !race

package runner_test

var buildFlags []string
