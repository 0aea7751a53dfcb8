// Command daemon is a Parley daemon that also serves the test-only
// `conformance` profile, for scripts/conformance. The shipped binary cannot
// serve that profile, whatever its environment: only this command registers it.
//
//	PARLEY_HOME=DIR go run ./internal/conformance/daemon -listen 127.0.0.1:0
//
// It prints the TCP address it serves once it is ready, and runs until
// SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/parley-dev/parley/internal/conformance"
	"github.com/parley-dev/parley/internal/daemon"
	"github.com/parley-dev/parley/internal/profile"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "TCP address to serve besides the socket")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	d, err := daemon.Open(ctx, daemon.Config{Listen: *listen, Version: "conformance", Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance daemon:", err)
		os.Exit(1)
	}
	d.MCP().Register(conformance.Name, func(*profile.Host) profile.Profile {
		return profile.Profile{Attach: conformance.Profile, Options: conformance.Options}
	})
	fmt.Println(d.TCPAddr())
	err = d.Run(ctx)
	d.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance daemon:", err)
		os.Exit(1)
	}
}
