//go:build !unix

package daemon

// outOfFiles: Windows has no per-process limit of open handles that accept
// meets (WSAEMFILE is the socket provider's own), so the spare never
// trades; net/http's accept loop retries as it does anywhere.
func outOfFiles(error) bool { return false }

// fileLimit: Windows has no per-process limit to name.
func fileLimit() uint64 { return 0 }
