// Command iomodel measures what one request/reply round trip costs a
// server's CPU under two I/O models, with no command work at all: a
// goroutine per connection over Go's netpoller (the model emqd's server
// uses, server/conn.go) and an event loop (gnet v2: one locked OS thread,
// epoll, no goroutine per connection). Each model answers every line it
// reads ("PING\r\n", redis-benchmark's PING_INLINE) with "+PONG\r\n".
//
// It is its own module so that gnet stays out of emqd's go.mod: see
// bench/README.md, "The I/O model" for how to run it and what it showed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/panjf2000/gnet/v2"
)

var pong = []byte("+PONG\r\n")

// replies appends one PONG per complete line in in[*start:] to out and
// advances *start past the last complete line.
func replies(out, in []byte) ([]byte, int) {
	used := 0
	for {
		i := bytes.IndexByte(in[used:], '\n')
		if i < 0 {
			return out, used
		}
		used += i + 1
		out = append(out, pong...)
	}
}

func serveGoroutines(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		nc, err := ln.Accept()
		if err != nil {
			return err
		}
		go func(nc net.Conn) {
			defer nc.Close()
			in := make([]byte, 0, 16<<10)
			var out []byte
			for {
				n, err := nc.Read(in[len(in):cap(in)])
				if err != nil {
					return
				}
				in = in[:len(in)+n]
				var used int
				out, used = replies(out[:0], in)
				in = in[:copy(in, in[used:])]
				if len(out) > 0 {
					if _, err := nc.Write(out); err != nil {
						return
					}
				}
			}
		}(nc)
	}
}

type loop struct {
	gnet.BuiltinEventEngine
	out []byte
}

func (l *loop) OnTraffic(c gnet.Conn) gnet.Action {
	in, _ := c.Peek(-1)
	var used int
	l.out, used = replies(l.out[:0], in)
	c.Discard(used)
	if len(l.out) > 0 {
		c.Write(l.out)
	}
	return gnet.None
}

func main() {
	model := flag.String("model", "goroutine", "goroutine (one per connection, Go's netpoller) or gnet (one event loop)")
	addr := flag.String("addr", "127.0.0.1:7200", "listen address")
	flag.Parse()
	var err error
	switch *model {
	case "goroutine":
		err = serveGoroutines(*addr)
	case "gnet":
		err = gnet.Run(&loop{}, "tcp://"+*addr, gnet.WithMulticore(false), gnet.WithNumEventLoop(1), gnet.WithTCPNoDelay(gnet.TCPNoDelay))
	default:
		err = fmt.Errorf("unknown --model %q", *model)
	}
	fmt.Fprintln(os.Stderr, "iomodel:", err)
	os.Exit(1)
}
