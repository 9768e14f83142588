package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLoadtestRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"loadtest", "--generator", "ab"},
		{"loadtest", "--generator", "wrk", "--students", "1"},
		{"loadtest", "--clients", "0"},
		{"loadtest", "--api", "http://10.0.0.1:8080"},
		{"loadtest", "extra"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
		assert.Equal(t, 2, code, "%v: %s", args, errOut.String())
		assert.Contains(t, errOut.String(), "usage: matchctl loadtest", "%v", args)
	}
}
