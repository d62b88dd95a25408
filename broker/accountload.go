package broker

import (
	"fmt"
	"slices"
)

// loadAccounts has nats-server load every configured account, one after another, before the
// server starts, so before anything connects or is dialed. nats-server loads an account at its
// first lookup, and a space's agent and storage accounts import from each other: to break that
// cycle it hands a concurrent lookup the account it is still building, before the account's
// signing keys are set, and a connection authenticated against that half-built account is
// refused ("User JWT issuer is not known"). Two first connections at once, such as a mesh's
// provisioner and delivery connections at start, hit that about once in 200 starts under
// -race. Loaded here from one goroutine, each account is complete before the first client's
// lookup finds it.
func (b *Broker) loadAccounts() error {
	keys := make([]string, 0, len(b.cfg.Accounts))
	for key := range b.cfg.Accounts {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if _, err := b.srv.LookupAccount(key); err != nil {
			return fmt.Errorf("load account %s: %w", key, err)
		}
	}
	return nil
}
