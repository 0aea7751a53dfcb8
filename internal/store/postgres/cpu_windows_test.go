//go:build windows

package postgres

import (
	"testing"
	"time"
)

// processCPU is unavailable here; CPU metrics read 0.
func processCPU(b *testing.B) time.Duration { return 0 }
