package local

import (
	"testing"
)

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8222", true},
		{"127.0.0.2:8222", true},
		{"[::1]:8222", true},
		{"localhost:8222", true},
		{"LocalHost:0", true},
		{":8222", false},
		{"0.0.0.0:8222", false},
		{"[::]:8222", false},
		{"192.168.1.5:8222", false},
		{"example.com:8222", false},
		{"127.0.0.1", false},
	}
	for _, tt := range tests {
		name := tt.addr + " binds only this machine"
		if !tt.want {
			name = tt.addr + " is not loopback"
		}
		t.Run(name, func(t *testing.T) {
			if got := IsLoopback(tt.addr); got != tt.want {
				t.Fatalf("IsLoopback(%q) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}
