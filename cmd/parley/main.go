// Command parley is a message bus and control room for AI coding agents.
package main

import (
	"context"
	"os"

	"github.com/parley-dev/parley/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
