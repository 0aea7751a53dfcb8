//go:build unix

package tmux

// unavailable is why tmux cannot run on this platform; nil where it can.
var unavailable error
