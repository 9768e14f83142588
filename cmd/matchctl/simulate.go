package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/collegematch/matching/internal/simulate"
)

func init() {
	register("simulate", command{
		usage: "simulate [--students 200] [--swipes 40] [--schools 6500] [--seed 1] [--svg FILE]",
		help:  "measure how well the learning loop learns, with synthetic students (no database needed)",
		run:   runSimulate,
	})
}

func runSimulate(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("simulate")
	students := fs.Int("students", 200, "number of synthetic students")
	swipes := fs.Int("swipes", 40, "swipes per student")
	schools := fs.Int("schools", 6500, "size of the generated catalogue")
	seed := fs.Uint64("seed", 1, "seed of the catalogue and the students; the same seed gives the same result")
	svg := fs.String("svg", "", "write the learning curves as SVG to `FILE`")
	page := fs.Int("page", 10, "items the simulated client takes per request and swipes in order")
	workers := fs.Int("workers", min(2, runtime.GOMAXPROCS(0)), "students simulated at once (the result does not depend on it)")
	compare := fs.Bool("compare-exploration", false, "also run the learner with uniformly random exploration picks")
	coldStart := fs.Bool("cold-start", false, "draw half the students from the onboarding categories and measure the cold start")
	if err := fs.Parse(args); err != nil {
		return usageErr("%v", err)
	}
	switch {
	case fs.NArg() > 0:
		return usageErr("unexpected argument %q", fs.Arg(0))
	case *students < 1 || *students > 100_000:
		return usageErr("--students must be between 1 and 100000")
	case *swipes < 1 || *swipes > 1000:
		return usageErr("--swipes must be between 1 and 1000")
	case *schools < 100 || *schools > 1_000_000:
		return usageErr("--schools must be between 100 and 1000000")
	case *page < 1 || *page > 20:
		return usageErr("--page must be between 1 and 20")
	case *workers < 1 || *workers > 64:
		return usageErr("--workers must be between 1 and 64")
	case *seed == 0:
		return usageErr("--seed must be positive")
	}
	cfg := simulate.Config{
		Students: *students, Swipes: *swipes, Schools: *schools, Seed: *seed, PageSize: *page,
		Workers: *workers, CompareExploration: *compare,
	}
	if *coldStart {
		cfg.Archetypes = simulate.ServiceArchetypes()
	}

	start := time.Now()
	done := make(chan simulate.Result, 1)
	go func() { done <- simulate.Run(cfg) }()
	var res simulate.Result
	select {
	case res = <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if _, err := fmt.Fprintf(e.stdout, "%s\n(%s)\n", res.Table(), time.Since(start).Round(100*time.Millisecond)); err != nil {
		return err
	}
	if *svg != "" {
		if dir := filepath.Dir(*svg); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(*svg, res.SVG(), 0o644); err != nil {
			return err
		}
		if _, err := fmt.Fprintf(e.stdout, "wrote %s\n", *svg); err != nil {
			return err
		}
	}
	return nil
}
