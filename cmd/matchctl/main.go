// Command matchctl is the operations CLI: schema migrations, the school
// catalogue, development tokens, student data rights and webhook repair.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/collegematch/matching/internal/config"
)

// env is what every command gets: configuration, output streams and a logger.
type env struct {
	cfg    config.Config
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	getenv func(string) string
}

type command struct {
	usage string
	help  string
	run   func(ctx context.Context, e env, args []string) error
}

// commands is filled by each command's file.
var commands = map[string]command{}

func register(name string, c command) { commands[name] = c }

// errUsage marks a mistake in the command line; matchctl exits 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "matchctl: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	cfg, err := config.Load(getenv, config.RoleCLI)
	if err != nil {
		fmt.Fprintln(stderr, "matchctl:", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	err = c.run(ctx, env{cfg: cfg, stdout: stdout, stderr: stderr, log: log, getenv: getenv}, args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "matchctl %s: %v\nusage: matchctl %s\n", args[0], err, c.usage)
		return 2
	default:
		fmt.Fprintf(stderr, "matchctl %s: %v\n", args[0], err)
		return 1
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "matchctl: operations CLI of the matching service\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-44s %s\n", commands[n].usage, commands[n].help)
	}
	fmt.Fprintln(w, "\nconfiguration comes from the environment (DATABASE_URL, REDIS_URL, AUTH_HS256_SECRET, ...); see .env.example")
}

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, strings.TrimSpace(fmt.Sprintf(format, args...)))
}
