// Package cli is the cotal command tree: `cotal up` and the commands people run beside a mesh.
// It talks to a running mesh only as a client (package endpoint) or through the admin socket
// beside the data directory; it re-implements no part of the mesh. main.go only calls Run.
package cli
