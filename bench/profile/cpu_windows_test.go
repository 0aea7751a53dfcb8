//go:build windows

package profile

import "time"

// processCPU is unavailable here; CPU metrics read 0.
func processCPU() time.Duration { return 0 }
