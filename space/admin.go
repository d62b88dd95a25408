package space

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/cotal-go/cotal/wire"
)

// AdminSocketName is the Unix socket in the data directory on which a running mesh serves
// credential administration. bbolt holds keys.db under an exclusive lock while the mesh
// runs, so `cotal auth` routes through this socket instead of opening the store. The socket
// is mode 0600 inside the 0700 data directory: only the user who runs the mesh reaches it.
const AdminSocketName = "cotal.sock"

// adminTimeout bounds one admin exchange on either side.
const adminTimeout = 30 * time.Second

// AdminRequest is one request on the admin socket.
type AdminRequest struct {
	// Op is "mint", "list", "revoke", "link", "links", "status", "pending" (ID is an instance
	// id or name), "channel-set" or "channel-defaults".
	Op      string         `json:"op"`
	Mint    *MintSpec      `json:"mint,omitempty"`
	Space   string         `json:"space,omitempty"`
	ID      string         `json:"id,omitempty"`
	Channel *ChannelUpdate `json:"channel,omitempty"`
}

// AdminReply answers one AdminRequest.
type AdminReply struct {
	OK          bool              `json:"ok"`
	Error       string            `json:"error,omitempty"`
	Credential  *MintedCredential `json:"credential,omitempty"`
	Credentials []CredentialInfo  `json:"credentials,omitempty"`
	Link        string            `json:"link,omitempty"`
	Links       map[string]string `json:"links,omitempty"`
	Status      *Status           `json:"status,omitempty"`
	Pending     *MemberBacklog    `json:"pending,omitempty"`

	ChannelConfig   *wire.ChannelConfig   `json:"channelConfig,omitempty"`
	ChannelDefaults *wire.ChannelDefaults `json:"channelDefaults,omitempty"`
}

type adminServer struct {
	ln   net.Listener
	path string
	wg   sync.WaitGroup
}

// serveAdmin listens on path; a stale socket left by a crashed mesh is replaced, but a live
// one (another mesh answering) is an error, so two meshes never share a directory.
func serveAdmin(m *Mesh, path string) (*adminServer, error) {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return nil, fmt.Errorf("another cotal mesh is serving %s: stop it first", path)
	}
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	s := &adminServer{ln: ln, path: path}
	s.wg.Add(1)
	go s.accept(m)
	return s, nil
}

func (s *adminServer) accept(m *Mesh) {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(m, c)
		}()
	}
}

func (s *adminServer) handle(m *Mesh, c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(adminTimeout))
	var req AdminRequest
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&req); err != nil {
		_ = json.NewEncoder(c).Encode(AdminReply{Error: "bad admin request: " + err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	reply := m.serveAdminRequest(ctx, req)
	_ = json.NewEncoder(c).Encode(reply)
}

func (m *Mesh) serveAdminRequest(ctx context.Context, req AdminRequest) AdminReply {
	var r AdminReply
	var err error
	switch req.Op {
	case "mint":
		if req.Mint == nil {
			err = errors.New("mint request without a mint body")
			break
		}
		r.Credential, err = m.MintSpec(ctx, *req.Mint)
	case "list":
		r.Credentials, err = m.Credentials(req.Space)
	case "revoke":
		err = m.Revoke(ctx, req.Space, req.ID)
	case "link":
		r.Link, err = m.Link(req.Space)
	default:
		r, err = m.serveAdminOp(ctx, req)
	}
	if err != nil {
		return AdminReply{Error: err.Error()}
	}
	r.OK = true
	return r
}

func (s *adminServer) close() error {
	err := s.ln.Close()
	s.wg.Wait()
	_ = os.Remove(s.path)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// ErrNoMesh means no mesh answers on the data directory's admin socket.
var ErrNoMesh = errors.New("no cotal mesh is running on this data directory")

// AdminCall sends one request to the mesh running on dir. It returns ErrNoMesh when nothing
// listens there, and the mesh's own error text otherwise.
func AdminCall(ctx context.Context, dir string, req AdminRequest) (AdminReply, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", dir+string(os.PathSeparator)+AdminSocketName)
	if err != nil {
		return AdminReply{}, fmt.Errorf("%w (%s)", ErrNoMesh, dir)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(adminTimeout))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return AdminReply{}, fmt.Errorf("admin socket: %w", err)
	}
	var reply AdminReply
	if err := json.NewDecoder(c).Decode(&reply); err != nil {
		return AdminReply{}, fmt.Errorf("admin socket: %w", err)
	}
	if !reply.OK {
		return reply, errors.New(reply.Error)
	}
	return reply, nil
}
