// Package broker runs the embedded nats-server of a cotal mesh: JetStream, decentralized JWT
// auth, an optional TCP/TLS listener, optional monitoring, and in-process connections. It
// knows nothing of spaces, channels or profiles: the caller hands it an operator JWT and
// already-signed account JWTs, and it enforces them (SPEC §8, §9).
//
// # Basics
//
// Start a broker, connect in process, shut down:
//
//	cfg := broker.DefaultConfig()
//	cfg.StoreDir = dir                        // or cfg.Memory = true for a throwaway mesh
//	cfg.OperatorJWT, cfg.Accounts = op, accts // accts includes the system account's JWT
//	b, err := broker.Start(ctx, cfg)
//	...
//	nc, err := nats.Connect("", nats.InProcessServer(b.InProcess()), nats.UserJWTAndSeed(userJWT, seed))
//	...
//	err = b.Shutdown(ctx)
//
// Start returns once the server accepts connections and JetStream is enabled; a memory mesh
// without a listener takes a few milliseconds (BenchmarkStartStop). Shutdown disconnects every
// client, flushes JetStream, and releases the store; it is idempotent and leaves no goroutine
// behind (tested with goleak, no goroutine ignored).
//
// # Auth modes
//
// Operator mode (SPEC §9: account = space, user = agent) trusts one operator. Every account
// JWT must be signed by the operator or one of its signing keys; user JWTs are signed by an
// account or one of its signing keys, which nats-server checks at connect. Open mode has no
// operator and no accounts: every client lands in one account with JetStream, and none of
// SPEC §9's security claims hold. Open mode is for development only.
//
// # Account resolver
//
// A single broker uses nats-server's memory resolver, preloaded at Start with every account
// JWT of Config.Accounts. UpdateAccount stores a changed JWT in the resolver and applies it to
// the running account at once (server.UpdateAccountClaims): connected users it revokes are
// disconnected before UpdateAccount returns, and an account the broker has not seen becomes
// usable. The memory resolver fits because the provisioner's key store is the one source of
// truth for account JWTs and hands all of them over at every start: a directory resolver
// would keep a second copy on disk that can drift from it.
//
// A cluster node (Config.Cluster) uses the full NATS resolver instead, in the store's jwt
// directory, preloaded the same way: a node without the key store knows only the system
// account at start and fetches every other account from its peers. UpdateAccount applies the
// JWT locally as above, then publishes it on $SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE as a system
// user, which every node's resolver stores and applies; a node that missed it catches up at
// its next resolver sync (one minute). nats-server's resolver ignores a JWT issued before the
// one it holds, so account JWTs must be signed on one machine with a clock that does not step
// back: the key-store node.
//
// Caveats: push account changes through UpdateAccount only. With a memory resolver,
// nats-server also accepts claim updates published on $SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE
// by a system user, but applies them to the running account without storing them in the
// resolver. Monitoring's /accountz shows the JWT an account was first loaded with; the
// claims in force are the latest UpdateAccount's. Revocation times are whole seconds: a user
// JWT issued in the same second as its revocation is revoked too, so re-mint after it.
//
// # JetStream
//
// JetStream is always enabled. An account gets JetStream only through JetStreamLimits in its
// JWT (for example all four of MemoryStorage, DiskStorage, Streams and Consumer set to -1):
// an account JWT without them has no JetStream at all, which the broker logs as a warning.
// The system account must have none (nats-server refuses it). Config.Sync says when the file
// store reaches stable storage: SyncAlways fsyncs before every acknowledgement, SyncInterval
// every SyncInterval (a power failure can lose up to one interval).
//
// Memory meshes keep their store in a private temporary directory removed at Shutdown, and
// the caller decides each stream's storage: memory streams are the fastest and never touch
// the disk, file streams also work and vanish with the broker. A persistent StoreDir is
// locked (flock, or LockFileEx on Windows) while the broker runs, because nats-server takes
// no lock of its own and two servers on one store corrupt it: a second Start on the same
// directory fails with ErrStoreLocked before nats-server reads it.
//
// # Connections
//
// Config.Listen "" runs no TCP listener at all. With Config.DeferListen the port stays closed
// when Start returns, so the owner can provision through in-process connections first, and
// Broker.Listen opens it: nats-server's Start skips its AcceptLoop under DontListen, and Listen
// runs the exported AcceptLoop on the same Host and Port later. In-process connections work
// with or without a listener, authenticate like any other, and are never TLS. The broker gives
// the client end of each in-process pipe a write buffer, because over a bare pipe a refused
// CONNECT deadlocks until nats-server's 10 s write deadline and the client then sees a
// closed-pipe error instead of "Authorization Violation". With TLSCert/TLSKey the TCP listener
// requires TLS; client certificates are not asked for, agents prove themselves with their JWT.
// MaxControlLine is 64 KiB (docs/storage.md "Broker settings"): a credential with many channel
// grants rides the CONNECT line and passes the 4 KiB default at about two channels. The
// monitoring endpoint (Config.HTTP) has no authentication: bind it to localhost.
//
// A user JWT carries no connection limit, only its account does, so Config.ConnectionsPerUser
// caps each user of Config.CappedAccounts itself: nats-server has no hook between checking a
// JWT and accepting its connection, so the broker watches connect events as its system user
// and closes a user's connections past the cap, newest first, about a millisecond after they
// connect (userconns.go). ConnectionsClosed counts them.
//
// # Logging and failures
//
// nats-server logs through Config.Logger: notices at Info, warnings at Warn, errors at Error,
// debug and trace lines (off unless Config.Debug or Config.Trace) at Debug. The refusal lines
// a client can provoke at will (permissions violations, a payload over its limit, a
// connection past its account's limit) are rate-limited per identity and kind: the first is
// logged, the rest within Config.ViolationLogInterval are counted in one summary line with
// the last of them, so a hostile client cannot flood the log and no refusal goes unrecorded.
// The server installs no signal handlers (NoSigs): SIGINT and SIGTERM stay the embedding program's. A
// fatal error never exits the process: during Start it
// makes Start fail with ErrFatal; afterwards the broker shuts the server down, and Healthy
// reports the ErrFatal error until the owner calls Shutdown. Done is closed whenever the
// server has stopped (Shutdown, a fatal error, or a shutdown underneath the broker) and Err
// says which, so an owner can stop with it.
package broker
