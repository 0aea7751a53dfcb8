package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// respConn is a minimal RESP2 client: enough for LPUSH, BLPOP, LPOP and PING.
// A few dozen lines keep the floor free of a client library's own overhead and
// of a new dependency.
type respConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dialRedis(addr string) (*respConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial redis %s: %w", addr, err)
	}
	return &respConn{c: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}, nil
}

func (r *respConn) Close() error { return r.c.Close() }

// write queues one command without flushing (for pipelines).
func (r *respConn) write(args ...string) {
	r.w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		r.w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
}

// do sends one command and reads its reply.
func (r *respConn) do(args ...string) (any, error) {
	r.write(args...)
	if err := r.w.Flush(); err != nil {
		return nil, err
	}
	return r.read()
}

// read reads one reply: string, int64, nil, []any, or an error for "-ERR".
func (r *respConn) read() (any, error) {
	line, err := r.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, errors.New("redis: short reply")
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, errors.New("redis: " + body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r.r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = r.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redis: unknown reply %q", line)
}
