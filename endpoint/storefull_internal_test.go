package endpoint

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestStoreFullNamesTheStoreThatRefused(t *testing.T) {
	full := &jetstream.APIError{Code: 503, ErrorCode: errCodeStoreFailed, Description: "maximum bytes exceeded"}
	tests := []struct {
		name, subject string
		err           error
		want          string // "" when err must pass unchanged
	}{
		{"a full DM stream is the DM store", "cotal.main.inst.UA.UB", full, "the DM store"},
		{"a task past its per-subject bound is the task store", "cotal.main.svc.builder.UB",
			&jetstream.APIError{Code: 503, ErrorCode: errCodeStoreFailed, Description: "maximum messages per subject exceeded"}, "the task store"},
		{"the space's storage used up is a full store too", "cotal.main.inst.UA.UB",
			&jetstream.APIError{Code: 400, ErrorCode: errCodeAccountResources, Description: "resource limits exceeded for account"}, "the DM store"},
		{"another store failure is not about room", "cotal.main.inst.UA.UB",
			&jetstream.APIError{Code: 503, ErrorCode: errCodeStoreFailed, Description: "message size exceeds maximum allowed"}, ""},
		{"a timeout is not a refusal", "cotal.main.inst.UA.UB", jetstream.ErrNoStreamResponse, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := storeFull(tt.subject, tt.err)
			if tt.want == "" {
				if got != tt.err {
					t.Fatalf("storeFull = %v; want %v unchanged", got, tt.err)
				}
				return
			}
			if !errors.Is(got, ErrStoreFull) || !errors.Is(got, tt.err) || !strings.Contains(got.Error(), tt.want) {
				t.Fatalf("storeFull = %v; want ErrStoreFull naming %q, wrapping %v", got, tt.want, tt.err)
			}
		})
	}
}
