// Package supervisor runs agent runtimes in the background for the mesh of `cotal up`, which
// holds the key store: `cotal start` asks it over the admin socket to run an agent file's
// runtime, `cotal ps`, `cotal stop` and `cotal logs` read and end what it runs.
//
// What it guarantees:
//
//   - A runtime is given what `cotal spawn` gives one (internal/cli/launch): the credential its
//     agent file declares, minted in process, and the files and environment that reach the
//     mesh. The credential is active while the agent is supervised and revoked when it ends:
//     on exit 0 (exited), after too many crashes (failed), on Stop, and on Close.
//   - Each runtime runs in a process group of its own (Unix), stdin /dev/null, its stdout and
//     stderr appended to output.log (0600) in its private directory, DIR/spawn/SPACE/NAME.
//     Stop and Close send SIGTERM to the group, SIGKILL after StopGrace, and kill what is left
//     of the group once its leader exited, so no child outlives the agent.
//   - A crash (a non-zero exit or a signal) restarts the runtime with the same credential after
//     a backoff of 1 s doubling to 30 s; MaxCrashes within CrashWindow make it failed.
//   - DIR/supervisor.json (0600) lists every agent whose credential is active, with the pid,
//     process group and start time of its runtime, rewritten on each change. Reap, run by the
//     next `cotal up` before it serves, kills the groups a supervisor killed with SIGKILL
//     left running, revokes their credentials and clears the file. On Linux a process is
//     killed only when its start time (/proc/PID/stat) says it is the one listed; elsewhere
//     the check cannot be made, so Reap only revokes.
//
// It does not restart agents across a restart of the mesh: an agent reaped is gone until it
// is started again.
package supervisor
