package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/bridge"
)

// The bridge's overhead: the same client calls the same tool sequentially,
// through `parley mcp serve` and against a bare go-sdk stdio server (this
// binary, re-run as one: the floor of a stdio MCP call). Then the bridge's
// share of a send->wake: the round trip over the daemon's stream without a
// bridge process in between.

// bareEnv makes this binary a bare go-sdk stdio server with tools named
// like Parley's, which do nothing.
const bareEnv = "PARLEY_BENCH_BARE_SERVER"

func init() {
	if os.Getenv(bareEnv) == "" {
		return
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	type whoOut struct {
		Agent     string `json:"agent"`
		Workspace string `json:"workspace"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, whoOut, error) {
		return nil, whoOut{Agent: "a", Workspace: "bare"}, nil
	})
	type sendIn struct {
		To      string `json:"to"`
		Content string `json:"content"`
	}
	type sendOut struct {
		MessageID string `json:"message_id"`
	}
	var n int
	mcp.AddTool(srv, &mcp.Tool{Name: "send_message"}, func(_ context.Context, _ *mcp.CallToolRequest, in sendIn) (*mcp.CallToolResult, sendOut, error) {
		n++
		return nil, sendOut{MessageID: strconv.Itoa(n)}, nil
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "bare server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

const (
	whoamiTarget = ">= 75% of the bare go-sdk stdio server"
	sendTarget   = ">= 60% of the bare go-sdk stdio server"
	// tsRounds: the TypeScript rows alternate floor and Parley this often.
	tsRounds = 4
)

func bridgeScenario(ctx context.Context, b *bench) error {
	d, err := b.newHome()
	if err != nil {
		return err
	}
	if err := d.start(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bare := exec.Command(self)
	bare.Env = append(os.Environ(), bareEnv+"=1")
	serve := d.cmd("mcp", "serve", "--workspace", "bridge", "--agent", "a")
	sendArgs := map[string]any{"to": "sink", "content": "bench"}
	dur := *flagDur

	// go-sdk client, through a command or (cmd nil) on the daemon's stream.
	rate := func(cmd *exec.Cmd, tool string, args map[string]any) (float64, error) {
		var s *mcp.ClientSession
		var err error
		if cmd == nil {
			s, err = d.streamSession(ctx, "bridge", "a")
		} else {
			c := mcp.NewClient(&mcp.Implementation{Name: "parley-bench", Version: "1"}, nil)
			s, err = c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, clientOpts)
		}
		if err != nil {
			return 0, err
		}
		defer s.Close()
		for range 50 {
			if _, err := callOK(ctx, s, tool, args); err != nil {
				return 0, err
			}
		}
		return measureRate(1, dur, func(int, int) error { _, err := callOK(ctx, s, tool, args); return err })
	}
	for _, tc := range []struct {
		tool, target string
		args         map[string]any
		share        float64
	}{
		{"whoami", whoamiTarget, nil, 0.75},
		{"send_message", sendTarget, sendArgs, 0.60},
	} {
		floor, err := rate(clone(bare), tc.tool, tc.args)
		if err != nil {
			return fmt.Errorf("bare server %s: %w", tc.tool, err)
		}
		got, err := rate(clone(serve), tc.tool, tc.args)
		if err != nil {
			return fmt.Errorf("mcp serve %s: %w", tc.tool, err)
		}
		b.val = append(b.val, valRow{name: "sequential " + tc.tool + ", go-sdk client, through parley mcp serve", unit: "calls/s",
			parley: got, floor: floor, target: tc.target, met: yes(got >= tc.share*floor),
			note: fmt.Sprintf("%.0f%% of the floor (a bare go-sdk stdio server, not redis)", 100*got/floor)})
		direct, err := rate(nil, tc.tool, tc.args)
		if err != nil {
			return fmt.Errorf("stream %s: %w", tc.tool, err)
		}
		b.val = append(b.val, valRow{name: "sequential " + tc.tool + ", go-sdk client, on the daemon's stream (no bridge process)", unit: "calls/s",
			parley: direct, floor: floor, note: fmt.Sprintf("%.0f%% of the floor: the bridge's share is the difference", 100*direct/floor)})
		logf("   go-sdk %s: %.0f calls/s, on the stream %.0f, bare %.0f", tc.tool, got, direct, floor)
	}

	// The official TypeScript SDK client, where test/ts has it installed.
	if _, err := os.Stat("test/ts/node_modules/@modelcontextprotocol/sdk"); err == nil {
		for _, tc := range []struct {
			tool, target string
			args         map[string]any
			share        float64
		}{
			{"whoami", whoamiTarget, map[string]any{}, 0.75},
			{"send_message", sendTarget, sendArgs, 0.60},
		} {
			// Turns of the floor and of Parley, so that the machine's other
			// load falls on both alike.
			var floor, got float64
			for range tsRounds {
				f, err := tsRate(dur/tsRounds, tc.tool, tc.args, bare)
				if err != nil {
					return fmt.Errorf("typescript client, bare server %s: %w", tc.tool, err)
				}
				g, err := tsRate(dur/tsRounds, tc.tool, tc.args, serve)
				if err != nil {
					return fmt.Errorf("typescript client, mcp serve %s: %w", tc.tool, err)
				}
				floor, got = floor+f/tsRounds, got+g/tsRounds
			}
			b.val = append(b.val, valRow{name: "sequential " + tc.tool + ", TypeScript SDK client, through parley mcp serve", unit: "calls/s",
				parley: got, floor: floor, target: tc.target, met: yes(got >= tc.share*floor),
				note: fmt.Sprintf("%.0f%% of the floor (a bare go-sdk stdio server, not redis)", 100*got/floor)})
			logf("   typescript %s: %.0f calls/s, bare %.0f", tc.tool, got, floor)
		}
	} else {
		logf("   no TypeScript SDK in test/ts/node_modules (scripts/test-deps installs it): its rows are skipped")
	}

	// The bridge's share of a send->wake: the same round trip on the
	// daemon's stream, from clients in this process.
	floors, err := b.wakeFloors()
	if err != nil {
		return err
	}
	defer floors.Close()
	a, err := d.streamSession(ctx, "bridge", "sa")
	if err != nil {
		return err
	}
	w, err := d.streamSession(ctx, "bridge", "b")
	if err != nil {
		return err
	}
	defer a.Close()
	defer w.Close()
	if _, err := sendWake(ctx, a, w, 50); err != nil {
		return err
	}
	row, err := floors.interleave(*flagN, func(n int) ([]time.Duration, error) { return sendWake(ctx, a, w, n) })
	if err != nil {
		return fmt.Errorf("send->wake on the stream: %w", err)
	}
	row.name = "send->wake, stream on the socket (no bridge process)"
	b.lat = append(b.lat, row)
	logf("   send->wake on the stream: p50 %s ms", ms(percentiles(row.parley)[0]))
	return nil
}

func clone(c *exec.Cmd) *exec.Cmd {
	n := exec.Command(c.Path, c.Args[1:]...)
	n.Env, n.Dir = c.Env, c.Dir
	return n
}

// tsRate runs test/ts/rate.mjs: sequential calls of tool through cmd, from
// the official TypeScript SDK client, for dur; it returns calls/s.
func tsRate(dur time.Duration, tool string, args map[string]any, cmd *exec.Cmd) (float64, error) {
	a, _ := json.Marshal(args)
	script, _ := filepath.Abs("test/ts/rate.mjs")
	node := exec.Command("node", append([]string{script, strconv.FormatFloat(dur.Seconds(), 'f', -1, 64), tool, string(a), cmd.Path}, cmd.Args[1:]...)...)
	node.Env, node.Dir = cmd.Env, cmd.Dir
	if node.Env == nil {
		node.Env = os.Environ()
	}
	node.Env = append(node.Env, "PATH="+os.Getenv("PATH"))
	node.Stderr = os.Stderr
	out, err := node.Output()
	if err != nil {
		return 0, fmt.Errorf("node rate.mjs: %w", err)
	}
	var r struct{ Rate float64 }
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, fmt.Errorf("node rate.mjs: %w: %s", err, out)
	}
	return r.Rate, nil
}

// streamSession opens an MCP session on the daemon's stream (what `parley
// mcp serve` uses), without a bridge process.
func (d *daemon) streamSession(ctx context.Context, ws, agent string) (*mcp.ClientSession, error) {
	c, br, err := bridge.DialStream(ctx, "unix", filepath.Join(d.home, "parley.sock"), "http://parley/mcp",
		http.Header{"Parley-Workspace": {ws}, "Parley-Agent": {agent}}, nil)
	if err != nil {
		return nil, err
	}
	t := &confirming{IOTransport: mcp.IOTransport{Reader: struct {
		io.Reader
		io.Closer
	}{br, c}, Writer: c}}
	return mcp.NewClient(&mcp.Implementation{Name: "parley-bench", Version: "1"}, nil).Connect(ctx, t, clientOpts)
}

// confirming confirms, as the bridge does, the messages a result handed out
// once the client has read it.
type confirming struct{ mcp.IOTransport }

func (t *confirming) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.IOTransport.Connect(ctx)
	return confirmingConn{c}, err
}

type confirmingConn struct{ mcp.Connection }

func (c confirmingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && bytes.Contains(r.Result, []byte(`"parley/delivered"`)) {
		var res struct {
			Meta struct {
				IDs []string `json:"parley/delivered"`
			} `json:"_meta"`
		}
		if json.Unmarshal(r.Result, &res) == nil && len(res.Meta.IDs) > 0 {
			params, _ := json.Marshal(map[string]any{"messageIds": res.Meta.IDs})
			if err := c.Write(ctx, &jsonrpc.Request{Method: api.MethodDelivered, Params: params}); err != nil {
				return nil, err
			}
		}
	}
	return msg, err
}
