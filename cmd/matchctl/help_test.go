package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `matchctl CMD -h` (and --help, -help, after a subcommand too, and
// `matchctl help CMD`) prints the command's usage, what it does and every
// flag its usage line names, with the flag's meaning, and exits 0 without
// reading the configuration or touching anything: DATABASE_URL and
// REDIS_URL name nothing that listens, and a bad LOG_LEVEL would stop any
// real run.
func TestEveryCommandPrintsItsFlags(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?sslmode=disable",
		"REDIS_URL":    "redis://127.0.0.1:1/0",
		"LOG_LEVEL":    "loud",
	}
	getenv := func(k string) string { return env[k] }
	flagName := regexp.MustCompile(`--[a-z][a-z-]*`)
	require.NotEmpty(t, commands)
	for name, c := range commands {
		var first string
		for i, args := range [][]string{{name, "-h"}, {name, "--help"}, {"help", name}, {name, "-help"}} {
			var out, errOut bytes.Buffer
			code := run(context.Background(), args, getenv, &out, &errOut)
			require.Equal(t, 0, code, "%v: %s", args, errOut.String())
			assert.Empty(t, errOut.String(), "%v", args)
			if i == 0 {
				first = out.String()
				continue
			}
			assert.Equal(t, first, out.String(), "%v", args)
		}
		assert.True(t, strings.HasPrefix(first, "usage: matchctl "+c.usage+"\n"), first)
		for _, flag := range flagName.FindAllString(c.usage, -1) {
			assert.Regexp(t, `(?m)^  `+flag+`( [A-Z]+)?\n      \S`, first, "%s -h describes %s", name, flag)
		}
	}

	// After a subcommand and among other arguments, too.
	for _, args := range [][]string{{"students", "delete", "--help"}, {"webhooks", "replay", "1", "-h"}, {"import-scorecard", "x.csv", "-h"}} {
		var out bytes.Buffer
		require.Equal(t, 0, run(context.Background(), args, getenv, &out, &out), "%v", args)
		assert.Contains(t, out.String(), "flags:\n", "%v", args)
	}

	// import-scorecard names its supplements and what they may do.
	var imp bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"import-scorecard", "-h"}, getenv, &imp, &imp))
	assert.True(t, strings.HasPrefix(imp.String(), "usage: matchctl import-scorecard [--prune] FILE [SUPPLEMENT...]\n"), imp.String())
	assert.Contains(t, strings.Join(strings.Fields(imp.String()), " "),
		"each SUPPLEMENT (another Scorecard or IPEDS file) only fills the values FILE lacks or leaves empty, "+
			"for the schools FILE lists (matched by UNITID, else by name, city and state), and adds no school")

	// The command list points at it.
	var out bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"help"}, getenv, &out, &out))
	assert.Contains(t, out.String(), "matchctl CMD -h")
}
