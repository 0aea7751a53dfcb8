//go:build windows

package sqlite

// fileLimit: Windows has no per-process limit to name.
func fileLimit() string { return "" }
