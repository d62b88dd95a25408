package local

import (
	"net"
	"strings"
)

// IsLoopback reports whether the listener address addr ("host:port") binds only this
// machine: host "localhost" or a loopback IP. An empty host binds every interface, and a
// name other than localhost may resolve anywhere, so neither is loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
