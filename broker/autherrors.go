package broker

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// authErrorEvents is where nats-server announces each connection it refused at CONNECT; %s is
// the server's id.
const authErrorEvents = "$SYS.SERVER.%s.CLIENT.AUTH.ERR"

// authRefusedKind is the kind under which refused credentials are rate-limited in the log.
const authRefusedKind = "refused credential"

// authErrorEvent is what watchAuthErrors reads of nats-server's server.DisconnectEventMsg.
type authErrorEvent struct {
	Client struct {
		Host string `json:"host"`
		JWT  string `json:"jwt"`
	} `json:"client"`
	Reason string `json:"reason"`
}

// watchAuthErrors logs each connection refused at CONNECT whose user JWT an account of this
// broker signed, naming the identity, the name its credential carries and why (expired,
// revoked): nats-server's own line says "authentication error" and names neither. A JWT no
// account of the broker signed adds no line, since its claims are anyone's to write. One
// identity's lines pass through the violation limiter, as every line a client can provoke.
func (b *Broker) watchAuthErrors() error {
	_, err := b.sys.Subscribe(fmt.Sprintf(authErrorEvents, b.srv.ID()), func(m *nats.Msg) {
		var ev authErrorEvent
		if json.Unmarshal(m.Data, &ev) != nil {
			return
		}
		uc, ac, ok := b.signedHere(ev.Client.JWT)
		if !ok {
			return
		}
		why := refusalReason(uc, ac, ev.Reason)
		if b.violations.admitAs(uc.Subject, authRefusedKind, "refused "+uc.Subject+": "+why) {
			b.log.Warn("refused a credential", "identity", uc.Subject, "name", uc.Name, "why", why,
				"host", ev.Client.Host)
		}
	})
	return err
}

// signedHere decodes token and returns its claims and its account's, if an account the
// broker trusts signed it (itself or through one of its signing keys).
func (b *Broker) signedHere(token string) (*jwt.UserClaims, *jwt.AccountClaims, bool) {
	uc, err := jwt.DecodeUserClaims(token) // checks the signature against uc.Issuer
	if err != nil {
		return nil, nil, false
	}
	account := uc.Issuer
	if uc.IssuerAccount != "" {
		account = uc.IssuerAccount
	}
	token, err = b.srv.AccountResolver().Fetch(account)
	if err != nil {
		return nil, nil, false
	}
	ac, err := jwt.DecodeAccountClaims(token)
	if err != nil || ac.Subject != account || !ac.DidSign(uc) {
		return nil, nil, false
	}
	return uc, ac, true
}

// refusalReason says why the broker refused uc, in words a user acts on; reason is
// nats-server's, kept when the credential is neither expired nor revoked.
func refusalReason(uc *jwt.UserClaims, ac *jwt.AccountClaims, reason string) string {
	switch {
	case uc.Expires > 0 && time.Unix(uc.Expires, 0).Before(time.Now()):
		return "the credential expired at " + time.Unix(uc.Expires, 0).UTC().Format(time.RFC3339) + "; mint a new one"
	case ac.IsClaimRevoked(uc):
		return "the credential was revoked; mint a new one"
	}
	return reason
}
