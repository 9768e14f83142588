// Package faultproxy is a TCP proxy on 127.0.0.1 that tests and the fault
// drills (matchctl drill) put between the service and a dependency
// (PostgreSQL, Redis) to make that dependency misbehave the way networks do:
// stop answering without closing anything (a black hole), or answer late.
// It is a tool: the service's binaries never import it, and it does not
// import the testing package, so a drill can use it outside a test.
//
// A black hole is the hard case for a client: no error ever arrives, so only
// the client's own deadlines end its calls. While the proxy is black-holed it
// still accepts connections (a SYN is answered by the kernel anyway) but
// forwards nothing in either direction; bytes read meanwhile are held and
// delivered, in order, once it is healed.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"time"
)

// Proxy forwards every connection accepted on Addr to the target.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	holed   bool
	delay   time.Duration
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
	accepts int
}

// TB is the part of testing.TB that ForURL uses, so that this package need
// not import testing.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// ForURL starts a proxy to rawURL's host ("scheme://host:port/...") and
// returns rawURL with the proxy's address in its place, for a client that
// should reach the server through it; the proxy is closed when the test
// ends.
func ForURL(t TB, rawURL string) (string, *Proxy) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("faultproxy: %s: %v", rawURL, err)
	}
	p, err := Start(u.Host)
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	u.Host = p.Addr()
	return u.String(), p
}

// Start listens on 127.0.0.1 (a free port) and forwards to target
// ("host:port").
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Blackhole stops (on) or resumes (off) forwarding on every connection,
// present and future, without closing any.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	p.holed = on
	p.mu.Unlock()
	p.cond.Broadcast()
}

// Delay makes every chunk forwarded in either direction wait d first (0:
// none).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Reset closes every open connection (the dependency "restarted"); new ones
// are still accepted.
func (p *Proxy) Reset() {
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// Accepted is how many connections the proxy has accepted so far.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepts
}

// Close stops listening, closes every connection and waits for the
// forwarding goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.holed = false
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.cond.Broadcast()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepts++
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(client)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	// A black hole holds the connection before it is even dialled through:
	// a new client's handshake gets no answer either.
	if !p.pass() {
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client); done <- struct{}{} }()
	go func() { p.pipe(client, server); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
}

// pipe copies src to dst chunk by chunk, each chunk waiting while the proxy
// is black-holed.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
			}
			return
		}
	}
}

// pass waits out a black hole and the delay; false when the proxy closed.
func (p *Proxy) pass() bool {
	p.mu.Lock()
	for p.holed && !p.closed {
		p.cond.Wait()
	}
	closed, d := p.closed, p.delay
	p.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
	return !closed
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}
