// Command upstream serves gatewaytest's server over stdio, or over Streamable
// HTTP with -http ADDR (it prints "listening on http://ADDR/mcp" to stdout).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/gateway/gatewaytest"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address instead of stdio")
	mark := flag.String("mark", os.Getenv("UPSTREAM_MARK"), "directory for event marks")
	exitAtStart := flag.Int("exit", -1, "exit at once with this status, after a word on stderr")
	flag.Parse()
	if *exitAtStart >= 0 {
		fmt.Fprintln(os.Stderr, "upstream: refusing to start: bad configuration")
		os.Exit(*exitAtStart)
	}
	srv := gatewaytest.NewServer(&gatewaytest.Options{MarkDir: *mark})
	if *addr == "" {
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	log.Fatal(http.Serve(ln, h))
}
