// Package provisioner is cotal's trust root: it owns the NATS operator, the system account and
// two accounts per space, mints per-instance user credentials with the exact permissions of
// SPEC Appendix B, records every credential, and revokes them (SPEC §9).
//
// # Trust model
//
// One operator (a self-signed operator JWT naming the system account) signs every account JWT.
// Each space is an agent account and a storage account (SPEC §9: account = space, user = agent;
// the split is docs/accounts.md "Two accounts per space", reasoned in wire/accounts.go). The
// agent account holds every credential Mint hands out; it has its own identity key and a
// separate signing key listed in its claims, which signs those user JWTs (IssuerAccount = the
// account), so the account identity key never signs a user. It has no JetStream: it imports
// from the storage account the service subjects wire.Names.StorageServiceSubjects lists and,
// per credential that can connect, its inbox as a stream; its JWT is re-signed when a new id is
// minted and at every revocation. The storage account holds the streams and buckets, carries
// explicit JetStream limits (Options.JetStream; without them an account has no JetStream),
// exports ">" once as a service (stream responses kept ResponseThreshold) and once as a stream,
// and signs cotal's own provisioner and delivery credentials. Both accounts have deny-all
// default permissions, which apply only to a user JWT that carries none. A space created before
// the split is upgraded by EnsureSpace: its account becomes the storage account, every
// credential minted in it is revoked (Account.Retired), and a new agent account takes its keys'
// place in the store. Trust hands the broker the operator JWT, the system account and every
// account JWT; the broker never sees a seed.
//
// # What is stored
//
// keys.db (bbolt) in the data directory holds the operator, system account, space account
// and signing seeds, the current account JWTs (revocations included) and the credential
// registry: for each instance id its name, profile, grants, issue and expiry times,
// revocation and revision. The seed of a minted credential is not stored: Mint returns it
// once, for the instance alone. Keys not yet minted wait in each space's key pool
// (keypool.go), whose inboxes the agent account imports ahead, so that a mint need not
// re-sign it. The directory is created with mode 0700 and keys.db is kept at 0600; seeds are
// not encrypted at rest, the file mode is the protection. bbolt's exclusive file lock
// means one process per data directory: a second Open fails with ErrLocked. Seeds never
// appear in an error or a log line.
//
// # Profiles (SPEC Appendix B)
//
// Permissions is a pure function from a profile, the space's names, an instance id and
// agent grants to a jwt.Permissions; testdata/*.golden pins every list. The lists themselves
// are data in package wire (wire.AgentPermissions and its siblings), the one definition the
// delivery service's tests also run under; this package validates grants and signs.
//
//   - agent: Appendix B's agent grants, plus cotal's additions (docs/accounts.md "Profiles and
//     grants"): control replies on cotal.<s>.ctl.delivery.<id>.> (the request subject is
//     Appendix B's ctl.<manager>.<id> with manager = delivery), binding dlv_<id>, create-denies
//     on DLV_<s>, and consumer delete on its presence and channel-registry watches.
//   - observer: Appendix B's observer grants, except the bare $JS.API.CONSUMER.CREATE.CHAT_<s>,
//     which is withheld and denied: that form takes the consumer name from the request body and
//     so can rewrite the delivery package's fanout consumer. Explicit denies keep create,
//     delete, pull and ack of fanout out of reach (docs/hostile-agents.md "cotal's own
//     consumers are out of reach"). It also reads the display-only membership feed (SPEC §8)
//     and may delete its presence watch consumers.
//   - admin: the observer's grants with sub.allow = [cotal.<s>.>, inbox] plus Appendix B's
//     DM history grants; the same fanout denies.
//   - provisioner and delivery: narrow infrastructure profiles that replace Appendix B's
//     allow-all manager. Each grant is commented with its reason in wire/grants_infra.go.
//
// Every profile may subscribe to its own _INBOX_<id>.> and publish $JS.API.INFO; none needs
// response permissions. The presence bucket's rollup denial (docs/hostile-agents.md "Presence
// cannot be wiped") is a bucket setting, not a permission.
//
// # Credentials
//
// Mint signs a user JWT with the profile's permissions, the tags cotal-profile:<p> and
// cotal-role:<r> (case kept), and an expiry (24 h by default), and records it. Re-minting an
// id revokes its previous active credential, so each id has one current read ACL (SPEC §9
// item 6); the new JWT is issued in a later second than the revocation, because NATS revokes
// every JWT of a user issued at or before the revocation second. Revoke does the same for an
// id without a successor. Both return the re-signed account JWT for the broker to apply.
// ACLFor gives the cotal_acl_<s> record the caller writes after each change. Expired
// credentials are refused by the server itself. InfraCredential mints unexpiring,
// unrecorded, in-process-only credentials for cotal's own connections.
//
// A name has one active credential: Mint refuses a Name another active credential holds
// (ErrNameInUse) unless the request names that identity (re-mint) or sets Replace, which
// revokes it in the same step. In-process-only credentials, minted per embedded Endpoint and
// worthless outside the process, are exempt. Mint also refuses, before recording anything, a
// user JWT that would not fit in the broker's CONNECT line (wire.MaxControlLine less
// room for the line's other fields): such a credential could never connect
// (ErrCredentialTooLarge).
//
// # Keeping the account JWT bounded
//
// A revocation is needed only until every JWT it covers has expired; the store records that
// time per revoked id (a non-expiring JWT keeps its revocation for good). Every revocation
// added, and EnsureSpace at start, drops the revocations past that time (plus a few seconds'
// grace) and the registry rows of credentials that can no longer connect and that no
// revocation needs, so the account JWT grows with the live credentials, not with every
// credential ever revoked. Forget applies the same rule (forgettable, forget.go) while a mesh
// runs, so expired credentials, such as the one-shot ones the commands mint, leave the
// registry without a restart. A credential minted with ForgetOnRevoke leaves it as soon as it
// is revoked; its revocation stays in the account JWT as long as any other would.
//
// The package does not talk to the broker: callers apply account JWTs and write ACL records.
package provisioner
