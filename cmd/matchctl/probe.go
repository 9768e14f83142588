package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

func init() {
	register("probe", command{
		usage: "probe [--timeout 2s] URL",
		help: "GET URL and exit 0 on a 2xx answer, 1 otherwise: a health check for images without a shell " +
			"(docker-compose.yml: [\"CMD\", \"/usr/local/bin/matchctl\", \"probe\", \"http://127.0.0.1:9090/readyz\"]); reads no configuration",
		run:        runProbe,
		standalone: true,
	})
}

func runProbe(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("probe")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer, connection included")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("one URL")
	}
	u, err := url.Parse(pos[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr("URL must be an http or https URL: %q", pos[0])
	}
	if *timeout <= 0 {
		return usageErr("--timeout must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	// No proxy: a health check reaches the process it names.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errors.New(resp.Status)
	}
	_, err = fmt.Fprintln(e.stdout, resp.Status)
	return err
}
