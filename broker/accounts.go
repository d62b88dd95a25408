package broker

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

// trustChain is the decoded operator mode configuration: who may sign accounts, and which
// account is the system account.
type trustChain struct {
	operator *jwt.OperatorClaims
	system   string
}

// verifyAccount decodes an account JWT and checks it the way nats-server checks a fetched
// account: signed by the operator or one of its signing keys, and valid now. wantKey, when
// set, must be the account's public key. The system account may not enable JetStream
// (nats-server refuses to start with it).
func (tc *trustChain) verifyAccount(token, wantKey string) (*jwt.AccountClaims, error) {
	claims, err := jwt.DecodeAccountClaims(token)
	if err != nil {
		return nil, fmt.Errorf("%w: it does not decode (%w): pass an account JWT signed by the operator", ErrInvalidAccountJWT, err)
	}
	if wantKey != "" && claims.Subject != wantKey {
		return nil, fmt.Errorf("%w: it is for account %s, not %s: key the map by the JWT's subject", ErrInvalidAccountJWT, claims.Subject, wantKey)
	}
	if claims.Issuer != tc.operator.Subject && !tc.operator.SigningKeys.Contains(claims.Issuer) {
		return nil, fmt.Errorf("%w: account %s is signed by %s, which is neither the operator %s nor one of its signing keys: re-sign it with the operator",
			ErrInvalidAccountJWT, claims.Subject, claims.Issuer, tc.operator.Subject)
	}
	vr := jwt.CreateValidationResults()
	claims.Validate(vr)
	if vr.IsBlocking(true) {
		return nil, fmt.Errorf("%w: account %s fails validation (%w): re-issue it", ErrInvalidAccountJWT, claims.Subject, errors.Join(vr.Errors()...))
	}
	if claims.Subject == tc.system && claims.Limits.IsJSEnabled() {
		return nil, fmt.Errorf("%w: the system account %s enables JetStream, which nats-server forbids: remove its JetStream limits", ErrInvalidAccountJWT, claims.Subject)
	}
	return claims, nil
}

// warnNoJetStream logs the one misconfiguration nats-server keeps silent about: an account
// JWT without JetStream limits gives that account no JetStream, so every stream operation
// of its users fails. An account that imports the JetStream API from another (a cotal
// space's agent account) uses that account's JetStream and is not warned about.
func (tc *trustChain) warnNoJetStream(log *slog.Logger, claims *jwt.AccountClaims) {
	if claims.Subject != tc.system && !claims.Limits.IsJSEnabled() && !importsJetStream(claims) {
		log.Warn("account JWT sets no JetStream limits: JetStream is disabled for this account", "account", claims.Subject)
	}
}

// UpdateAccount installs a changed account JWT (new revocations, limits, signing keys) while
// the broker runs, or adds an account the broker has not seen. The change is applied before
// UpdateAccount returns: connected users that the new JWT revokes are disconnected, and their
// later connects are refused. The JWT must be signed by the trusted operator or one of its
// signing keys. Calls are serialized, so the last call's JWT wins in the server and in the
// resolver alike.
//
// Revocation compares whole seconds: a user JWT issued in the same second as its revocation
// is revoked too (nats-server treats "issued at or before" as revoked).
func (b *Broker) UpdateAccount(token string) error {
	if b.trust == nil {
		return ErrOpenMode
	}
	claims, err := b.trust.verifyAccount(token, "")
	if err != nil {
		return err
	}
	b.accountMu.Lock()
	defer b.accountMu.Unlock()
	if b.isStopping() {
		return ErrClosed
	}
	if !b.srv.Running() {
		return ErrNotRunning
	}
	// Store first: an account not loaded yet is fetched from the resolver by the lookup below,
	// so it must already see the new JWT.
	if err := b.resolver.Store(claims.Subject, token); err != nil {
		return fmt.Errorf("store account %s in the resolver: %w", claims.Subject, err)
	}
	acc, err := b.srv.LookupAccount(claims.Subject)
	if err != nil {
		return fmt.Errorf("load account %s: %w", claims.Subject, err)
	}
	b.srv.UpdateAccountClaims(acc, claims)
	b.trust.warnNoJetStream(b.log, claims)
	return b.pushAccount(claims.Subject, token)
}

// newResolver returns the memory resolver preloaded with every configured account JWT,
// which Validate has already verified.
func newResolver(accounts map[string]string) (*server.MemAccResolver, error) {
	r := &server.MemAccResolver{}
	for key, token := range accounts {
		if err := r.Store(key, token); err != nil {
			return nil, fmt.Errorf("preload account %s: %w", key, err)
		}
	}
	return r, nil
}

// jsAPI is the JetStream API's subject space, which a cross-account JetStream user imports.
const jsAPI = "$JS.API.>"

// importsJetStream reports whether claims import the JetStream API as a service.
func importsJetStream(claims *jwt.AccountClaims) bool {
	for _, im := range claims.Imports {
		if im.Type == jwt.Service && string(im.Subject) == jsAPI {
			return true
		}
	}
	return false
}
