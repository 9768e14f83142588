// Command matchctl is the operations CLI: schema migrations, the school
// catalogue, development tokens, student data rights and webhook repair.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/tasks"
)

// env is what every command gets: configuration, output streams and a logger.
type env struct {
	cfg    config.Config
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	getenv func(string) string
	// flags, when not nil, is told the command's flags (see flagSet).
	flags **flag.FlagSet
}

// flagSet is the FlagSet a command declares and parses its flags with. A
// command parses its flags before it does anything else: `matchctl CMD -h`
// runs it with -h alone and prints the flags declared here.
func (e env) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if e.flags != nil {
		*e.flags = fs
	}
	return fs
}

// parseArgs parses fs's flags wherever they stand among the positional
// arguments ("import-scorecard FILE --prune" works too) and returns the
// positional arguments in order.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageErr("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

type command struct {
	usage string
	help  string
	run   func(ctx context.Context, e env, args []string) error
	// standalone commands read no configuration: they run wherever the
	// binary does (a health check inside the API's container).
	standalone bool
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
	if len(args) == 2 && args[0] == "help" {
		args = []string{args[1], "-h"} // matchctl help CMD
	}
	if len(args) == 0 || args[0] == "help" || isHelp(args[0]) {
		printUsage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "matchctl: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	if slices.ContainsFunc(args[1:], isHelp) {
		printHelp(stdout, args[0], c)
		return 0
	}
	var cfg config.Config
	if !c.standalone {
		var err error
		if cfg, err = config.Load(getenv, config.RoleCLI); err != nil {
			fmt.Fprintln(stderr, "matchctl:", err)
			return 1
		}
		// An erasure forgets the student's learn mark in their shard, and
		// the queue console counts the shards: the fleet's LEARN_SHARDS.
		if err := tasks.SetLearnShards(cfg.LearnShards); err != nil {
			fmt.Fprintln(stderr, "matchctl:", err)
			return 1
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	err := c.run(ctx, env{cfg: cfg, stdout: stdout, stderr: stderr, log: log, getenv: getenv}, args[1:])
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
	fmt.Fprintln(w, "\nmatchctl CMD -h (or matchctl help CMD) describes a command and its flags")
	fmt.Fprintln(w, "configuration comes from the environment (DATABASE_URL, REDIS_URL, AUTH_HS256_SECRET, ...); see .env.example")
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// printHelp describes command name: its usage, what it does, and each of
// its flags with its default. It learns the flags by running the command
// with -h alone, on a cancelled context and an empty configuration, so
// nothing the command might reach is touched.
func printHelp(w io.Writer, name string, c command) {
	var fs *flag.FlagSet
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.run(ctx, env{stdout: io.Discard, stderr: io.Discard, log: slog.New(slog.DiscardHandler),
		getenv: func(string) string { return "" }, flags: &fs}, []string{"-h"})
	fmt.Fprintf(w, "usage: matchctl %s\n\n%s\n", c.usage, wrap(c.help, 78))
	if fs == nil {
		return
	}
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name
		}
		if kind != "" {
			line += " " + strings.ToUpper(kind)
		}
		line += "\n      " + usage
		if def := f.DefValue; def != "" && def != "false" && def != "0" {
			line += " (default " + def + ")"
		}
		lines = append(lines, line)
	})
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nflags:\n%s\n", strings.Join(lines, "\n"))
	}
}

// wrap breaks s into lines of at most width characters, at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(s) {
		if n > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, strings.TrimSpace(fmt.Sprintf(format, args...)))
}
