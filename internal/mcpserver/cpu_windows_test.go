package mcpserver_test

import "time"

// processCPU is not measured on Windows: the benchmarks report 0.
func processCPU() time.Duration { return 0 }
