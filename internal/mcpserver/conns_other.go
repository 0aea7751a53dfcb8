//go:build !linux || parley_portable

package mcpserver

// platformProbe is the probe of WatchConns (conns_linux.go has Linux's).
var platformProbe sockProbe = portableProbe{}
