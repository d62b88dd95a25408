package broker

import "errors"

// Errors from Validate and Start: the configuration or the host cannot run a broker.
var (
	// ErrInvalidConfig wraps every Validate error; the message names the field and the fix.
	ErrInvalidConfig = errors.New("invalid broker configuration")
	// ErrTLS means TLSCert/TLSKey do not load as a certificate and its private key.
	ErrTLS = errors.New("cannot load the TLS certificate and key")
	// ErrStoreLocked means another running broker holds the store directory.
	ErrStoreLocked = errors.New("store directory is in use by another running broker")
	// ErrNotReady means the server did not accept connections with JetStream enabled within
	// ReadyTimeout.
	ErrNotReady = errors.New("broker did not become ready")
)

// Errors while running.
var (
	// ErrFatal means nats-server reported a fatal error; the broker shuts itself down.
	ErrFatal = errors.New("nats-server reported a fatal error")
	// ErrClosed means the broker has been shut down.
	ErrClosed = errors.New("broker is shut down")
	// ErrStopped means nats-server stopped although Shutdown was not called.
	ErrStopped = errors.New("nats-server stopped without a Shutdown")
	// ErrNotRunning means the server stopped accepting work although Shutdown was not called.
	ErrNotRunning = errors.New("nats-server is not running")
	// ErrJetStreamDisabled means the server runs without JetStream.
	ErrJetStreamDisabled = errors.New("jetstream is not enabled")
	// ErrOpenMode means an account operation was asked of a broker started with Open.
	ErrOpenMode = errors.New("broker runs in open mode without accounts")
	// ErrInvalidAccountJWT means an account JWT does not decode, is not signed by the trusted
	// operator, or fails validation.
	ErrInvalidAccountJWT = errors.New("invalid account JWT")
)
