package faultproxy_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/tools/faultproxy"
)

// echo serves lines back on 127.0.0.1 until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, deadline time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(deadline))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestBlackholeHoldsAndHeals(t *testing.T) {
	p, err := faultproxy.Start(echo(t))
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })

	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	got, err := roundTrip(c, r, 2*time.Second)
	require.NoError(t, err)
	require.Equal(t, "ping\n", got)

	p.Blackhole(true)
	_, err = roundTrip(c, r, 200*time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "a black hole answers nothing and closes nothing")
	require.True(t, ne.Timeout())

	// A connection opened during the black hole is accepted but silent too.
	c2, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c2.Close()
	r2 := bufio.NewReader(c2)
	_, err = roundTrip(c2, r2, 200*time.Millisecond)
	require.ErrorAs(t, err, &ne)

	p.Blackhole(false)
	// What was held arrives in order: the old ping's echo first.
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	got, err = r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ping\n", got)
	got, err = roundTrip(c2, r2, 2*time.Second)
	require.NoError(t, err)
	require.Equal(t, "ping\n", got)
	require.Equal(t, 2, p.Accepted())
}

func TestDelayAndReset(t *testing.T) {
	p, err := faultproxy.Start(echo(t))
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)

	p.Delay(100 * time.Millisecond)
	start := time.Now()
	_, err = roundTrip(c, r, 2*time.Second)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "both directions wait")
	p.Delay(0)

	p.Reset()
	_, err = roundTrip(c, r, 2*time.Second)
	require.Error(t, err, "a reset closes the connection")
}
