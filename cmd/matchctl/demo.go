package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/demo"
)

func init() {
	register("demo", command{
		usage: "demo [--addr 127.0.0.1:8081] [--api URL] [--ttl 24h]",
		help:  "serve the demo page (a fresh student each start), the API docs at /docs and a proxy to the API",
		run:   runDemo,
	})
}

func runDemo(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("demo")
	addr := fs.String("addr", "127.0.0.1:8081", "listen address (loopback only: the page hands out a development token)")
	apiURL := fs.String("api", "", "the public API's base URL (default: from HTTP_ADDR, http://127.0.0.1:8080)")
	ttl := fs.Duration("ttl", 24*time.Hour, "lifetime of each session's token")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	if *ttl <= 0 {
		return usageErr("--ttl must be positive")
	}
	if err := loopbackAddr(*addr); err != nil {
		return usageErr("--addr %s", err)
	}
	if *apiURL == "" {
		*apiURL = apiURLFor(e.cfg.HTTPAddr)
	}
	target, err := url.Parse(*apiURL)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return usageErr("--api must be an http(s) URL with a host, got %q", *apiURL)
	}
	if len(e.cfg.HS256Secret) == 0 {
		return errors.New("AUTH_HS256_SECRET is not set; the demo logs in with a development token signed with it (make demo sets it)")
	}

	handler, err := demo.NewServer(demo.Options{
		API: target,
		Log: e.log,
		NewSession: func() (demo.Session, error) {
			student := uuid.NewString()
			now := time.Now()
			tok, err := auth.MintHS256(e.cfg.HS256Secret, auth.MintOptions{
				Subject: student, TTL: *ttl, Issuer: e.cfg.Issuer, Audience: e.cfg.Audience, Now: now,
			})
			return demo.Session{StudentID: student, Token: tok, ExpiresAt: now.Add(*ttl).UTC().Truncate(time.Second)}, err
		},
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	base := "http://" + ln.Addr().String()
	if _, err := fmt.Fprintf(e.stdout, "Demo page: %s/   API docs: %s/docs   (API %s; a fresh student each start)\n",
		base, base, target); err != nil {
		_ = ln.Close()
		return err
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// loopbackAddr accepts a host:port whose host is a loopback address or
// localhost.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("is not host:port: %v", err)
	}
	if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("must be a loopback address (127.0.0.1, [::1], localhost), got %q", host)
}

// apiURLFor is the URL that reaches the API listening on HTTP_ADDR from
// this machine: a wildcard or empty host is reached on 127.0.0.1.
func apiURLFor(httpAddr string) string {
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return "http://127.0.0.1:8080"
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
