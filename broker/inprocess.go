package broker

import (
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// InProcess returns the provider for nats.InProcessServer: connections through a pipe inside
// the process, with no TCP listener needed. They authenticate like any other connection and
// are never TLS. After Shutdown the provider refuses with ErrClosed; a client configured to
// reconnect keeps trying until its MaxReconnects, so close clients before the broker.
func (b *Broker) InProcess() nats.InProcessConnProvider { return inProcess{b} }

type inProcess struct{ b *Broker }

// InProcessConn implements nats.InProcessConnProvider.
func (p inProcess) InProcessConn() (net.Conn, error) {
	if p.b.isStopping() {
		return nil, ErrClosed
	}
	c, err := p.b.srv.InProcessConn()
	if err != nil {
		return nil, err
	}
	return newBufferedConn(c), nil
}

// pipeWriteBuffer is how many bytes a client may queue ahead of the server's reads before
// its Write blocks; one write larger than this is still accepted whole.
const pipeWriteBuffer = 64 << 10

// closeDrainTimeout bounds how long Close waits for the server to take queued bytes.
const closeDrainTimeout = 2 * time.Second

// bufferedConn gives the client end of nats-server's in-process net.Pipe the write buffer a
// socket has. A pipe write blocks until the other side reads, and nats.go writes CONNECT and
// PING separately before reading: when the server refuses CONNECT, it writes the
// "Authorization Violation" error before reading PING, both sides block, and the client only
// fails after the server's 10 s write deadline with an opaque closed-pipe error. Queueing the
// client's writes lets it read the refusal at once.
type bufferedConn struct {
	net.Conn
	mu      sync.Mutex
	ready   sync.Cond // signalled when queued grows, drained shrinks, or the conn closes
	queued  []byte
	closed  bool
	err     error         // the first write error of the pump; sticky
	stopped chan struct{} // closed when the pump has returned
}

func newBufferedConn(c net.Conn) *bufferedConn {
	bc := &bufferedConn{Conn: c, stopped: make(chan struct{})}
	bc.ready.L = &bc.mu
	go bc.pump()
	return bc
}

// Write queues p for the server and returns; it blocks only while the queue is full.
func (c *bufferedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queued) >= pipeWriteBuffer && !c.closed && c.err == nil {
		c.ready.Wait()
	}
	switch {
	case c.closed:
		return 0, net.ErrClosed
	case c.err != nil:
		return 0, c.err
	}
	c.queued = append(c.queued, p...)
	c.ready.Broadcast()
	return len(p), nil
}

// Close hands what is still queued to the server, as a closed socket still delivers its
// send buffer, waiting at most closeDrainTimeout; then it closes the pipe. No goroutine
// outlives it.
func (c *bufferedConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.ready.Broadcast()
	c.mu.Unlock()
	// A deadline error only means the pipe is closed already; the drain then fails at once.
	_ = c.Conn.SetWriteDeadline(time.Now().Add(closeDrainTimeout))
	<-c.stopped
	return c.Conn.Close()
}

// pump moves queued bytes into the pipe until the connection closes or a write fails.
func (c *bufferedConn) pump() {
	defer close(c.stopped)
	for {
		c.mu.Lock()
		for len(c.queued) == 0 && !c.closed {
			c.ready.Wait()
		}
		chunk, last := c.queued, c.closed
		c.queued = nil
		c.ready.Broadcast() // room for blocked writers
		c.mu.Unlock()

		if len(chunk) > 0 {
			if _, err := c.Conn.Write(chunk); err != nil {
				c.mu.Lock()
				c.err = err
				c.ready.Broadcast()
				c.mu.Unlock()
				return
			}
		}
		if last {
			return
		}
	}
}
