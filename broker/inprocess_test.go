package broker

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
)

func TestBufferedConn(t *testing.T) {
	t.Run("writes return while the server is not reading", func(t *testing.T) {
		client, server := net.Pipe()
		bc := newBufferedConn(client)
		defer bc.Close()
		defer server.Close() // first, so Close does not wait for a reader
		done := make(chan error, 1)
		go func() {
			_, err := bc.Write([]byte("CONNECT {}\r\n"))
			if err == nil {
				_, err = bc.Write([]byte("PING\r\n"))
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Write blocked although the queue has room")
		}
	})
	t.Run("Close delivers what is queued", func(t *testing.T) {
		client, server := net.Pipe()
		defer server.Close()
		bc := newBufferedConn(client)
		if _, err := bc.Write([]byte("PUB a 1\r\nx\r\n")); err != nil {
			t.Fatalf("Write: %v", err)
		}
		got := make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(server)
			got <- string(b)
		}()
		if err := bc.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if s := <-got; s != "PUB a 1\r\nx\r\n" {
			t.Errorf("server read %q, want the queued bytes", s)
		}
	})
	t.Run("a write after Close fails", func(t *testing.T) {
		client, server := net.Pipe()
		defer server.Close()
		bc := newBufferedConn(client)
		bc.Close()
		if _, err := bc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Write after Close = %v, want net.ErrClosed", err)
		}
	})
	t.Run("a write after the server hung up fails", func(t *testing.T) {
		client, server := net.Pipe()
		bc := newBufferedConn(client)
		defer bc.Close()
		server.Close()
		await.Check(t, 10*time.Second, time.Millisecond, func() error {
			if _, err := bc.Write([]byte("x")); err != nil {
				return nil
			}
			return errNotYet
		})
	})
}
