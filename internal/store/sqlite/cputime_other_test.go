//go:build !linux

package sqlite

import "time"

// threadCPU is unavailable here; CPU metrics read 0.
func threadCPU() time.Duration { return 0 }

func lockThread() func() { return func() {} }
