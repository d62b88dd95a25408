package provisioner

import "errors"

// Errors opening and configuring the key store.
var (
	// ErrLocked means another process holds keys.db open: two cotal processes cannot share a
	// data directory.
	ErrLocked = errors.New("key store is locked by another process")
	// ErrInvalidOptions means an Options field is out of range; the message names the field.
	ErrInvalidOptions = errors.New("invalid provisioner options")
)

// Errors naming something the store does not hold.
var (
	// ErrUnknownSpace means the space has no account yet; call EnsureSpace first.
	ErrUnknownSpace = errors.New("unknown space")
	// ErrUnknownCredential means the registry holds no credential with that id in the space.
	ErrUnknownCredential = errors.New("unknown credential")
)

// Errors in a profile or grant request (SPEC §9, Appendix B).
var (
	// ErrUnknownProfile means the profile is not one of the Profile constants, or is an
	// infrastructure profile passed to Mint (use InfraCredential).
	ErrUnknownProfile = errors.New("unknown profile")
	// ErrInvalidGrant means a channel policy string, role or id is malformed, or subscribe is
	// not covered by allowSubscribe.
	ErrInvalidGrant = errors.New("invalid grant")
	// ErrWiderGrant means grants reach past the grants they must stay within (Grants.Within).
	ErrWiderGrant = errors.New("grant wider than the spawner's own")
	// ErrGrantsNotAllowed means channel grants or a role were given to a profile whose
	// permissions they cannot change (observer, admin, infrastructure).
	ErrGrantsNotAllowed = errors.New("grants apply only to the agent profile")
)

// Errors in a mint request.
var (
	// ErrInvalidRequest means a MintRequest field is missing or contradictory; the message
	// names the field.
	ErrInvalidRequest = errors.New("invalid mint request")
	// ErrClock means the wall clock moved backwards far enough that a fresh JWT would be
	// issued inside its own revocation window; retry once the clock is sane.
	ErrClock = errors.New("clock moved backwards")
	// ErrNameInUse means another active credential in the space already carries the name:
	// minting a second one would leave two credentials the holder of the name can use. Name
	// the old identity to re-mint it, revoke it first, or set Replace to revoke it with the
	// mint.
	ErrNameInUse = errors.New("name in use by an active credential")
	// ErrCredentialTooLarge means the user JWT would not fit in the CONNECT line the broker
	// accepts (max_control_line), so the credential could never connect; the message says
	// how many channel grants fit.
	ErrCredentialTooLarge = errors.New("credential too large to connect")
)

// Errors writing a .creds file.
var (
	// ErrUnsafePath means the .creds path is a symlink or not a regular file; the file is
	// never written through it.
	ErrUnsafePath = errors.New("refusing to write credentials through a symlink or non-regular file")
)
