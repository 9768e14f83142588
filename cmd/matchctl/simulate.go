package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/catalog/bundled"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tools/simulate"
	"github.com/collegematch/matching/internal/tools/simulate/live"
)

func init() {
	register("simulate", command{
		usage: "simulate [--students 200] [--swipes 40] [--schools 6500] [--seed 1] [--svg FILE] | simulate --families [--variant 0|1|2] [--gain steep|percentile] [--students 200] [--swipes 50] [--seed 1] [--svg FILE] | simulate --api URL [--students 10] [--swipes 40] [--families [--variant 0|1|2] [--gain steep|percentile]]",
		help:  "measure how well the learning loop learns, with synthetic students (no database needed); --api: drive a running service through its API",
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
	api := fs.String("api", "", "drive the service at this base URL (its catalogue from DATABASE_URL, tokens from AUTH_HS256_SECRET)")
	noFeedback := fs.Bool("no-feedback", false, "with --api: leave feedback prompts unanswered")
	weightsOnly := fs.Bool("weights-only", false, "the learner without its residual (the eight weights alone), for comparison")
	families := fs.Bool("families", false, "students whose hidden tastes are not the service's score (five families), on the bundled catalogue of real schools")
	variant := fs.Int("variant", 0, "with --families: the families' shapes, 0 (those the learner was tuned on), 1 (held out) or 2 (shapes further from both)")
	gainName := fs.String("gain", "steep", "with --families: how NDCG grades a school, steep (7/3/1 for the student's top 1/3/10 %) or percentile (the school's percentile in the student's own order)")
	if err := fs.Parse(args); err != nil {
		return usageErr("%v", err)
	}
	gain, err := simulate.ParseGain(*gainName)
	switch {
	case err != nil:
		return usageErr("--%v", err)
	case gain != simulate.GainSteep && !*families:
		return usageErr("--gain needs --families")
	}
	if *api != "" {
		return runSimulateLive(ctx, e, fs, *api, *noFeedback, *families, gain)
	}
	if *families {
		return runSimulateFamilies(ctx, e, fs, familyRun{variant: *variant, gain: gain}, *students, *swipes, *seed, *page, *workers, *svg)
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
		Workers: *workers, CompareExploration: *compare, WeightsOnly: *weightsOnly,
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
	return writeSVG(e, *svg, res.SVG())
}

// writeSVG writes a plot to path (its folder made when missing) and says
// so; nothing when path is "".
func writeSVG(e env, path string, svg []byte) error {
	if path == "" {
		return nil
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(path, svg, 0o644); err != nil {
		return err
	}
	_, err := fmt.Fprintf(e.stdout, "wrote %s\n", path)
	return err
}

// runSimulateLive drives a running service with the simulation's students
// (internal/tools/simulate/live) and prints what it answered.
func runSimulateLive(ctx context.Context, e env, fs *flag.FlagSet, api string, noFeedback, families bool, gain simulate.Gain) error {
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "schools", "svg", "compare-exploration", "cold-start", "weights-only":
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return usageErr("%s cannot be used with --api (the catalogue is the service's)", strings.Join(bad, ", "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["variant"] && !families:
		return usageErr("--variant needs --families")
	case set["no-feedback"] && families:
		return usageErr("--no-feedback cannot be used with --families: family students leave feedback prompts unanswered")
	}
	if u, err := url.Parse(api); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr("--api must be an http(s) URL, e.g. http://127.0.0.1:8080")
	}
	get := func(name string) int { v, _ := strconv.Atoi(fs.Lookup(name).Value.String()); return v }
	students, swipes, page, workers, variant := 10, get("swipes"), get("page"), get("workers"), get("variant")
	if families {
		students, swipes, workers = 200, 50, 4
	}
	given := map[string]*int{"students": &students, "swipes": &swipes, "workers": &workers}
	fs.Visit(func(f *flag.Flag) {
		if v, ok := given[f.Name]; ok {
			*v = get(f.Name)
		}
	})
	seed, _ := strconv.ParseUint(fs.Lookup("seed").Value.String(), 10, 64)
	switch {
	case fs.NArg() > 0:
		return usageErr("unexpected argument %q", fs.Arg(0))
	case students < 1 || students > 10_000:
		return usageErr("--students must be between 1 and 10000")
	case swipes < 1 || swipes > 1000:
		return usageErr("--swipes must be between 1 and 1000")
	case page < 1 || page > 50:
		return usageErr("--page must be between 1 and 50")
	case families && page > 20:
		return usageErr("--page must be between 1 and 20 with --families (the references are served in pages of at most 20)")
	case workers < 1 || workers > 64:
		return usageErr("--workers must be between 1 and 64")
	case seed == 0:
		return usageErr("--seed must be positive")
	case variant < 0 || variant > 2:
		return usageErr("--variant must be 0, 1 or 2")
	}
	secret := e.cfg.HS256Secret
	if len(secret) == 0 {
		return errors.New("--api needs AUTH_HS256_SECRET, the development secret of the service it drives, to mint its students' tokens")
	}

	pool, err := store.Open(ctx, e.cfg.DatabaseURL)
	if err != nil {
		return err
	}
	schools, err := store.New(pool).ActiveSchools(ctx)
	pool.Close()
	if err != nil {
		return err
	}
	if len(schools) == 0 {
		return errors.New("the catalogue at DATABASE_URL is empty; run matchctl seed")
	}
	token := func(id string) (string, error) {
		return auth.MintHS256(secret, auth.MintOptions{Subject: id, TTL: time.Hour})
	}
	if families {
		res, err := live.RunFamilies(ctx, live.FamiliesConfig{
			API: api, Schools: schools, Students: students, Swipes: swipes, PageSize: page, Seed: seed,
			Workers: workers, Variant: variant, Gain: gain, Token: token,
		})
		if _, werr := fmt.Fprint(e.stdout, res.Table()); werr != nil && err == nil {
			err = werr
		}
		return err
	}
	res, err := live.Run(ctx, live.Config{
		API: api, Schools: schools, Students: students, Swipes: swipes, PageSize: page, Seed: seed, Workers: workers,
		NoFeedback: noFeedback, Token: token,
	})
	if _, werr := fmt.Fprint(e.stdout, res.Table()); werr != nil && err == nil {
		err = werr
	}
	return err
}

// familyRun is what a families-mode run varies: the families' shapes and
// the gain NDCG grades schools by.
type familyRun struct {
	variant int
	gain    simulate.Gain
}

// runSimulateFamilies runs the families mode on the bundled catalogue.
func runSimulateFamilies(ctx context.Context, e env, fs *flag.FlagSet, run familyRun, students, swipes int, seed uint64, page, workers int, svg string) error {
	variant := run.variant
	var bad []string
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		set[f.Name] = true
		switch f.Name {
		case "schools", "compare-exploration", "cold-start", "weights-only":
			bad = append(bad, "--"+f.Name)
		}
	})
	switch {
	case len(bad) > 0:
		return usageErr("%s cannot be used with --families (the catalogue is the bundled one)", strings.Join(bad, ", "))
	case fs.NArg() > 0:
		return usageErr("unexpected argument %q", fs.Arg(0))
	case variant < 0 || variant > 2:
		return usageErr("--variant must be 0, 1 or 2")
	case students < 1 || students > 100_000:
		return usageErr("--students must be between 1 and 100000")
	case swipes < 1 || swipes > 1000:
		return usageErr("--swipes must be between 1 and 1000")
	case page < 1 || page > 20:
		return usageErr("--page must be between 1 and 20")
	case workers < 1 || workers > 64:
		return usageErr("--workers must be between 1 and 64")
	case seed == 0:
		return usageErr("--seed must be positive")
	}
	if !set["swipes"] {
		swipes = 50
	}
	schools, err := bundled.Schools()
	if err != nil {
		return err
	}
	cfg := simulate.FamiliesConfig{Schools: schools, Students: students, Swipes: swipes, Seed: seed,
		Variant: variant, PageSize: page, Workers: workers, Gain: run.gain}
	start := time.Now()
	done := make(chan simulate.FamiliesResult, 1)
	go func() { done <- simulate.RunFamilies(cfg) }()
	var res simulate.FamiliesResult
	select {
	case res = <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if _, err = fmt.Fprintf(e.stdout, "%s\n(%s)\n", res.Table(), time.Since(start).Round(100*time.Millisecond)); err != nil {
		return err
	}
	return writeSVG(e, svg, res.SVG())
}
