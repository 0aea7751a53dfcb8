package profile_test

import (
	"flag"

	"github.com/parley-dev/parley/internal/mcpserver/mcptest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// env is the tests' environment (mcptest.Env), under short names.
type env = mcptest.Env

var (
	newEnv  = mcptest.New
	call    = mcptest.Call
	text    = mcptest.Text
	waitFor = mcptest.WaitFor
)
