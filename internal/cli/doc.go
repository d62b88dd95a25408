// Package cli is the cotal command tree: `cotal up` and the commands people run beside a mesh.
// It talks to a running mesh only as a client (package endpoint) or through the admin socket
// beside the data directory; it re-implements no part of the mesh. main.go only calls Run.
//
// Human output escapes every string a peer or the registry chose (names, roles, activities,
// message text, channels, descriptions, errors quoting them) with package termsafe, so nothing
// a peer writes can control the terminal; a message's lines after the first are indented
// under its sender. --json output carries the exact data, for programs.
package cli
