// Package local holds the rules for what only this machine, and only this user, may reach:
// which listener addresses stay on the machine (IsLoopback) and which files and directories
// no other local user could have written (SecureDir, ReadPrivate, CheckPrivateDir). The
// configuration loader and the mesh both apply them, so each rule is written once, here.
package local
