// Command authproxy stands between the MCP conformance suite and a Parley
// daemon's TCP listener, for scripts/conformance only. The suite takes a bare
// URL and cannot send headers, while the daemon refuses every TCP request
// without 'Authorization: Bearer TOKEN'. The proxy adds the token and
// nothing else: requests addressed to the proxy under a loopback name have
// their Host and Origin mapped to the daemon's address, and any other Host or
// Origin (the suite's DNS-rebinding probe) passes through unchanged, so that
// the daemon's own checks are what the suite tests.
//
// Usage: authproxy -target 127.0.0.1:PORT -token-file $PARLEY_HOME/token
// It prints its base URL (http://127.0.0.1:PORT) on the first line of stdout.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
)

func main() {
	target := flag.String("target", "", "the daemon's TCP address, host:port")
	tokenFile := flag.String("token-file", "", "file holding the bearer token")
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	if *target == "" || *tokenFile == "" {
		log.Fatal("authproxy: -target and -token-file are required")
	}
	b, err := os.ReadFile(*tokenFile)
	if err != nil {
		log.Fatalf("authproxy: %v", err)
	}
	token := strings.TrimSpace(string(b))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("authproxy: %v", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	own := map[string]bool{"127.0.0.1:" + port: true, "localhost:" + port: true, "[::1]:" + port: true}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: *target})
			pr.Out.Host = pr.In.Host
			if own[strings.ToLower(pr.In.Host)] {
				pr.Out.Host = *target
			}
			if o := pr.In.Header.Get("Origin"); o != "" {
				if u, err := url.Parse(o); err == nil && own[strings.ToLower(u.Host)] {
					pr.Out.Header.Set("Origin", "http://"+*target)
				}
			}
			pr.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1, // SSE: pass every event on at once
	}
	fmt.Printf("http://127.0.0.1:%s\n", port)
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the (small) JSON-RPC body first: streamed through, about one
		// SSE response in 30 was cut short upstream ("use of closed network
		// connection") and the suite's call timed out.
		b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		rp.ServeHTTP(w, r)
	})))
}
