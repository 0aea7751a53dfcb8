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
	"sync"
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
//
// It is also the floor of send->wake on the socket (issue 38): started with
// -bare-durable, each send_message appends its content to a journal and
// fsyncs it before it answers and before a blocked wait_for_message gets it,
// as Redis with appendfsync always does and as a Parley send commits: what
// separates Parley from it there is everything but the go-sdk's transport
// and one fsync.

type bareSend struct {
	To      string `json:"to"`
	Content string `json:"content"`
}

type bareResult struct {
	Status    string `json:"status"`
	MessageID string `json:"message_id"`
}

type bareWait struct {
	Timeout float64 `json:"timeout,omitempty"`
}

type bareWoke struct {
	Status  string `json:"status"`
	Content string `json:"content,omitempty"`
}

// serveBare is the floor server's main. With journal set, every send is
// appended to that file and fsynced before anything else sees it.
func serveBare(sock, journal string) error {
	var seq atomic.Int64
	answer := func() bareResult {
		return bareResult{Status: "delivered", MessageID: strconv.FormatInt(seq.Add(1), 10)}
	}
	var (
		mu  sync.Mutex
		jf  *os.File
		box = make(chan string, 1024) // agent b's inbox: the send->wake scenario's waiter
	)
	if journal != "" {
		f, err := os.OpenFile(journal, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		jf = f
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "send_message", Description: "store nothing (or journal it), answer like send_message"},
		func(_ context.Context, _ *mcp.CallToolRequest, in bareSend) (*mcp.CallToolResult, bareResult, error) {
			if in.To == "" {
				return nil, bareResult{}, fmt.Errorf("no recipient")
			}
			if jf != nil {
				mu.Lock()
				_, err := jf.WriteString(in.To + " " + in.Content + "\n")
				if err == nil {
					err = jf.Sync()
				}
				mu.Unlock()
				if err != nil {
					return nil, bareResult{}, err
				}
			}
			if in.To == "b" {
				select {
				case box <- in.Content:
				default:
				}
			}
			return nil, answer(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait_for_message", Description: "block until a send to b, answer like wait_for_message"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in bareWait) (*mcp.CallToolResult, bareWoke, error) {
			t := time.NewTimer(time.Duration(max(in.Timeout, 1) * float64(time.Second)))
			defer t.Stop()
			select {
			case c := <-box:
				return nil, bareWoke{Status: "message_received", Content: c}, nil
			case <-t.C:
				return nil, bareWoke{Status: "timeout"}, nil
			case <-ctx.Done():
				return nil, bareWoke{}, ctx.Err()
			}
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
func (b *bench) startBare() (*daemon, error) { return b.startBareServer(false) }

// startBareServer starts the floor server; durable, it journals each send
// with an fsync (the send->wake floor).
func (b *bench) startBareServer(durable bool) (*daemon, error) {
	d, err := b.newHome()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(d.home, "parley.sock")
	args := []string{"-bare-serve", sock}
	if durable {
		args = append(args, "-bare-journal", filepath.Join(d.home, "journal"))
	}
	cmd := exec.Command(self, args...)
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
