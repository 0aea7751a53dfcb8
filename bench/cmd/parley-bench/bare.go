package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bare server is the floor of the MCP and JSON API throughput rows: the
// same transports on a Unix socket, answering the same requests with the same
// result shape, but storing nothing. It runs in a process of its own (this
// binary, re-executed with -bare-serve) so that its CPU time can be read from
// /proc like the daemon's. What separates Parley from it is Parley's own work
// per send: validation, the hub, the store, the durable commit.

type bareSend struct {
	To      string `json:"to"`
	Content string `json:"content"`
}

type bareResult struct {
	Status    string `json:"status"`
	MessageID string `json:"message_id"`
}

// serveBare is the floor server's main.
func serveBare(sock string) error {
	var seq atomic.Int64
	answer := func() bareResult {
		return bareResult{Status: "delivered", MessageID: strconv.FormatInt(seq.Add(1), 10)}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "send_message", Description: "store nothing, answer like send_message"},
		func(_ context.Context, _ *mcp.CallToolRequest, in bareSend) (*mcp.CallToolResult, bareResult, error) {
			if in.To == "" {
				return nil, bareResult{}, fmt.Errorf("no recipient")
			}
			return nil, answer(), nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	mux.HandleFunc("POST /api/v1/messages", func(w http.ResponseWriter, r *http.Request) {
		var in bareSend
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.To == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(answer())
	})
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	go func() {
		// The bench holds our stdin: when it goes, so do we.
		var b [1]byte
		os.Stdin.Read(b[:])
		os.Exit(0)
	}()
	return http.Serve(ln, mux)
}

// startBare starts the floor server and returns it as a daemon the scenarios
// can drive (httpSession, api, cpuTime of its pid).
func (b *bench) startBare() (*daemon, error) {
	d, err := b.newHome()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(d.home, "parley.sock")
	cmd := exec.Command(self, "-bare-serve", sock)
	if *flagGOGC != "" {
		cmd.Env = append(os.Environ(), "GOGC="+*flagGOGC)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b.cleanups = append(b.cleanups, func() { stdin.Close(); cmd.Wait() })
	d.pid = cmd.Process.Pid
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return d, nil
		}
		if time.Since(start) > 10*time.Second {
			return nil, fmt.Errorf("bare server did not listen on %s", sock)
		}
	}
}
