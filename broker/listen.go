package broker

import "fmt"

// Listen opens the client listener of a broker started with Config.DeferListen and returns
// once the port accepts TCP clients (ClientURL reports it from then on). It does nothing when
// the listener is already open or Config.Listen is empty.
//
// nats-server started with DontListen skips only its AcceptLoop; the exported AcceptLoop binds
// opts.Host:opts.Port (a random port for 0) and starts accepting exactly as Start would have.
// When the port cannot be bound, nats-server reports it as fatal and the broker shuts down, so
// Done closes and Listen returns the ErrFatal error.
func (b *Broker) Listen() error {
	if b.cfg.Listen == "" {
		return nil
	}
	b.listenMu.Lock()
	defer b.listenMu.Unlock()
	if b.srv.Addr() != nil {
		return nil
	}
	if b.isStopping() {
		return ErrClosed
	}
	ready := make(chan struct{})
	b.srv.AcceptLoop(ready)
	<-ready
	if b.srv.Addr() != nil {
		return nil
	}
	err := b.fatal.error()
	if err == nil {
		err = ErrNotRunning
	}
	return fmt.Errorf("open client listener %s: %w", b.cfg.Listen, err)
}
