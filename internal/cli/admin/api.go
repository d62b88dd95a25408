package admin

import (
	"errors"
	"net/http"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// SocketName is the admin socket's file name in the data directory.
const SocketName = "cotal.sock"

// pingPath answers as soon as the socket is bound, before the mesh is ready (Ping).
const pingPath = "/v1/ping"

// Ping is the body of GET /v1/ping: whether the mesh serves the other routes yet.
type Ping struct {
	Ready bool `json:"ready"`
}

// Errors of the admin socket itself, beside the mesh's own (see reasons).
var (
	// ErrNoMesh means nothing answers on the data directory's admin socket.
	ErrNoMesh = errors.New("no cotal mesh is running on this data directory")
	// ErrUnsafeSocket means the data directory's admin socket is not one this user's mesh
	// serves (another owner, a mode others may use, a directory others may write), so the
	// client sends nothing to it: it may be planted to catch a minted seed.
	ErrUnsafeSocket = errors.New("the admin socket could have been planted by another user")
	// ErrMeshRunning means another mesh already serves the data directory's admin socket.
	ErrMeshRunning = errors.New("another cotal mesh is serving this data directory")
	// ErrBadRequest means a request body does not decode, or contradicts its path.
	ErrBadRequest = errors.New("bad admin request")
	// ErrNotFound means no route matches the request's path.
	ErrNotFound = errors.New("no such admin route")
)

// Link is the body of GET /v1/spaces/{space}/link: one space's join link (SPEC §10).
type Link struct {
	Space string `json:"space"`
	Link  string `json:"link"`
}

// errorBody is the body of every error reply.
type errorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
}

// reason ties one of the mesh's sentinel errors to its HTTP status and a stable token.
type reason struct {
	token  string
	status int
	err    error
}

// reasons is read both ways: the server answers with the first entry whose err the handler's
// error matches (500 and no token when none does); the client wraps the err of the token it
// reads.
var reasons = []reason{
	{"bad-request", http.StatusBadRequest, ErrBadRequest},
	{"invalid-mint-request", http.StatusBadRequest, provisioner.ErrInvalidRequest},
	{"invalid-grant", http.StatusBadRequest, provisioner.ErrInvalidGrant},
	{"grants-not-allowed", http.StatusBadRequest, provisioner.ErrGrantsNotAllowed},
	{"unknown-profile", http.StatusBadRequest, provisioner.ErrUnknownProfile},
	{"invalid-channel", http.StatusBadRequest, wire.ErrInvalidChannel},
	{"invalid-channel-config", http.StatusBadRequest, wire.ErrInvalidChannelConfig},
	{"not-found", http.StatusNotFound, ErrNotFound},
	{"no-such-space", http.StatusNotFound, space.ErrNoSuchSpace},
	{"unknown-space", http.StatusNotFound, provisioner.ErrUnknownSpace},
	{"unknown-credential", http.StatusNotFound, provisioner.ErrUnknownCredential},
	{"unknown-instance", http.StatusNotFound, space.ErrUnknownInstance},
	{"unknown-channel", http.StatusNotFound, space.ErrUnknownChannel},
	{"credential-too-large", http.StatusBadRequest, provisioner.ErrCredentialTooLarge},
	{"ambiguous-name", http.StatusConflict, space.ErrAmbiguousName},
	{"name-in-use", http.StatusConflict, provisioner.ErrNameInUse},
	{"open-mode", http.StatusConflict, space.ErrOpenMode},
	{"no-key-store", http.StatusConflict, space.ErrNoKeyStore},
	{"no-listener", http.StatusConflict, space.ErrNoListener},
	{"contended", http.StatusConflict, space.ErrContended},
	{"closed", http.StatusServiceUnavailable, space.ErrClosed},
	{"agent-active", http.StatusConflict, ErrAgentActive},
	{"agent-supervised", http.StatusConflict, ErrAgentSupervised},
	{"no-such-agent", http.StatusNotFound, ErrNoSuchAgent},
	{"no-supervisor", http.StatusNotFound, ErrNoSupervisor},
	{"wide-grant", http.StatusBadRequest, ErrWideGrant},
}

// classify is the status and reason token the server answers err with.
func classify(err error) (int, string) {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.status, r.token
		}
	}
	return http.StatusInternalServerError, ""
}

// sentinel is the mesh error a reason token stands for, or nil.
func sentinel(token string) error {
	for _, r := range reasons {
		if r.token == token {
			return r.err
		}
	}
	return nil
}
