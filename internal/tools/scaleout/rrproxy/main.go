// Command rrproxy is the round-robin proxy of the scale-out run
// (scripts/scaleout.sh): it listens on a loopback address and sends each
// request to the next API replica in turn. It is a test harness, not part
// of the service's deployment.
//
//	rrproxy -listen 127.0.0.1:18200 -backend http://127.0.0.1:18201 -backend http://127.0.0.1:18202
//
// On SIGTERM or SIGINT it prints the requests each replica received.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/collegematch/matching/internal/tools/scaleout"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	listen := flag.String("listen", "127.0.0.1:18200", "loopback address to listen on")
	var backends list
	flag.Var(&backends, "backend", "an API replica's base URL (repeat)")
	flag.Parse()
	if err := run(*listen, backends); err != nil {
		fmt.Fprintln(os.Stderr, "rrproxy:", err)
		os.Exit(1)
	}
}

func run(listen string, backends []string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %s: only a loopback address", listen)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p, err := scaleout.NewProxy(log, backends)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "rrproxy: http://%s -> %s\n", ln.Addr(), strings.Join(backends, ", "))
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintf(os.Stderr, "rrproxy: %s\n", p.Stats())
	return nil
}
