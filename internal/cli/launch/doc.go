// Package launch is what an agent runtime is given to reach the mesh, in one place for
// `cotal spawn` (a foreground runtime, minted over the admin socket) and the supervisor of
// `cotal up` (background runtimes, minted in process): the private directory
// DIR/spawn/SPACE/NAME with the credential (NAME.creds), the MCP configuration (mcp.json, in
// Claude Code's .mcp.json shape, running `cotal mcp` as the agent) and the persona
// (persona.md), each 0600 in a 0700 directory; the COTAL_* environment; and the argv of a
// runtime preset (claude: --mcp-config, --append-system-prompt, --model).
//
// Prepare mints the credential an agent file declares, for the identity of the agent's last
// spawn when its credential file is still there, and refuses a name an active credential
// holds. A credential it minted and could not write the files for is revoked before Prepare
// returns; every other revocation is the caller's (Agent.Revoke).
package launch
