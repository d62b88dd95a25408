package space

import (
	"errors"
	"fmt"
	"time"

	"github.com/cotal-go/cotal/broker"
)

// ErrBrokerStopped is the Err of a mesh whose embedded broker stopped, or whose JetStream was
// turned off, while the mesh ran; it wraps the broker's cause.
var ErrBrokerStopped = errors.New("space: the embedded broker stopped")

// jetStreamCheck is how often the watcher checks that JetStream still runs: nats-server can
// turn it off (a store it cannot write) without stopping.
const jetStreamCheck = time.Second

// Done is closed once the mesh has stopped for any reason: Close returned, or the broker or
// its JetStream died underneath it. Err then says which. A mesh that died still holds its key
// store and connections until Close.
func (m *Mesh) Done() <-chan struct{} { return m.done }

// Err is nil while the mesh runs and after a clean Close; once Done is closed because the
// broker or JetStream died, it is an ErrBrokerStopped error naming the cause.
func (m *Mesh) Err() error {
	select {
	case <-m.done:
		return m.err
	default:
		return nil
	}
}

// stop closes done once, recording err as the reason.
func (m *Mesh) stop(err error) {
	m.doneOnce.Do(func() {
		m.err = err
		close(m.done)
	})
}

// watch turns the broker's death, or JetStream's, into Done until Close begins.
func (m *Mesh) watch() {
	defer m.watcher.Done()
	tick := time.NewTicker(jetStreamCheck)
	defer tick.Stop()
	for {
		select {
		case <-m.life.Done():
			return
		case <-m.broker.Done():
			m.fail(m.broker.Err())
			return
		case <-tick.C:
			if !m.broker.Server().JetStreamEnabled() {
				m.fail(broker.ErrJetStreamDisabled)
				return
			}
		}
	}
}

func (m *Mesh) fail(cause error) {
	m.log.Error("the mesh stopped working", "err", cause)
	m.stop(fmt.Errorf("%w: %w", ErrBrokerStopped, cause))
}
