// Package admin is the administration API of a running mesh: plain HTTP with JSON bodies on
// a Unix socket, SocketName in the data directory, which `cotal up` serves and every other
// cotal command calls through Client. The mesh holds bbolt's exclusive lock on the key store
// while it runs, so minting, revoking and the operator reports go through the mesh that holds
// it, never around it.
//
// The socket is mode 0600 inside the 0700 data directory: only the user who runs the mesh
// reaches it, which is the API's whole access control. Client checks the same from its side
// before it sends anything: a socket of another owner or mode, or in a directory others may
// write, is refused with ErrUnsafeSocket, since it may be planted to catch a seed. A stale
// socket left by a crashed mesh is replaced; a live one (another mesh answering) is refused,
// so two meshes never share a directory. It answers curl:
//
//	curl --unix-socket DIR/cotal.sock http://cotal/v1/status
//
// Routes (every body is JSON; errors are {"error": sentence, "reason": token}):
//
//	GET    /v1/ping                                 200 Ping, at once, even while the mesh starts
//	GET    /v1/status                               200 space.Status
//	GET    /v1/links                                200 {space: join link}
//	GET    /v1/spaces/{space}/link                  200 Link
//	POST   /v1/spaces/{space}/credentials           201 MintedCredential (body MintSpec)
//	GET    /v1/spaces/{space}/credentials           200 [space.CredentialInfo]
//	DELETE /v1/spaces/{space}/credentials/{id}      204
//	GET    /v1/spaces/{space}/pending/{who}         200 space.MemberBacklog (who: id or name)
//	PATCH  /v1/spaces/{space}/channels/{channel}    200 wire.ChannelConfig (body space.ChannelUpdate)
//	DELETE /v1/spaces/{space}/channels/{channel}    200 space.ChannelRemoval
//	PATCH  /v1/spaces/{space}/defaults              200 wire.ChannelDefaults (body space.ChannelUpdate)
//	POST   /v1/agents                               201 AgentInfo (body AgentStart): run an agent file
//	GET    /v1/agents                               200 [AgentInfo]: the supervised agents
//	DELETE /v1/spaces/{space}/agents/{name}         204: stop it, revoke its credential
//	GET    /v1/spaces/{space}/agents/{name}/logs    200 AgentLogs (?n= lines, default 20)
//
// Status codes: 400 a request that does not decode or that the mesh refuses as invalid, 404
// an unknown space, credential, instance, channel or route (a known path with another method
// included), 409 a conflict
// with the mesh's state (an ambiguous name, open mode, a contended registry entry), 503 a
// mesh that is closing, 500 anything else. Client turns each reason token back into the
// mesh's sentinel error, so errors.Is works across the socket as it does in process.
package admin
