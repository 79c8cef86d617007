// sockjs-go broadcast server: one room, every message goes to every session.
// Usage: sockjs-go [--host 127.0.0.1] [--port 0]
//
// It runs on one core (GOMAXPROCS 1), as the other contenders run on one
// event loop. A session's messages are broadcast by that session's own
// goroutine, and sockjs-go writes to each receiver as it is sent to: a reader
// that falls behind slows the senders.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"github.com/igm/sockjs-go/v3/sockjs"
)

const prefix = "/broadcast"

type room struct {
	mu       sync.RWMutex
	sessions map[sockjs.Session]struct{}
}

func (r *room) serve(session sockjs.Session) {
	r.mu.Lock()
	r.sessions[session] = struct{}{}
	r.mu.Unlock()
	for {
		message, err := session.Recv()
		if err != nil {
			break
		}
		r.mu.RLock()
		for other := range r.sessions {
			_ = other.Send(message)
		}
		r.mu.RUnlock()
	}
	r.mu.Lock()
	delete(r.sessions, session)
	r.mu.Unlock()
}

func main() {
	runtime.GOMAXPROCS(1)
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 0, "port to listen on (0: an ephemeral one)")
	flag.Parse()

	listener, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sockjs-go: "+err.Error())
		os.Exit(1)
	}
	broadcast := &room{sessions: make(map[sockjs.Session]struct{})}
	options := sockjs.DefaultOptions
	options.RawWebsocket = true
	handler := sockjs.NewHandler(prefix, options, broadcast.serve)

	address := listener.Addr().(*net.TCPAddr)
	fmt.Printf("sockjs-go listening on http://%s%s\n",
		net.JoinHostPort(address.IP.String(), strconv.Itoa(address.Port)), prefix)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		os.Exit(0)
	}()
	if err := http.Serve(listener, handler); err != nil {
		fmt.Fprintln(os.Stderr, "sockjs-go: "+err.Error())
		os.Exit(1)
	}
}
