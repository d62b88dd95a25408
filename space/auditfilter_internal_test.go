package space

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// TestTheAuditFilterPassesEveryConsumerCreateAndNoOtherCall encodes API audits as nats-server
// does (server.JSAPIAudit through encoding/json) and checks that the filter before decoding
// lets every consumer create form through, so the on-create check and the watch cap see them,
// and passes over other calls, including one whose request quotes a create subject.
func TestTheAuditFilterPassesEveryConsumerCreateAndNoOtherCall(t *testing.T) {
	tests := []struct {
		name, subject, request string
		want                   bool
	}{
		{"a named consumer create", "$JS.API.CONSUMER.CREATE.DM_main.dm_U1", `{"stream_name":"DM_main"}`, true},
		{"a named create with a filter", "$JS.API.CONSUMER.CREATE.CHAT_main.c.cotal.main.chat.>", "{}", true},
		{"the legacy durable create", "$JS.API.CONSUMER.DURABLE.CREATE.DM_main.dm_U1", "{}", true},
		{"a consumer info", "$JS.API.CONSUMER.INFO.DM_main.dm_U1", "", false},
		{"a stream info", "$JS.API.STREAM.INFO.CHAT_main", "", false},
		{"a message get quoting a create subject", "$JS.API.STREAM.MSG.GET.KV_x",
			`{"subject":"$JS.API.CONSUMER.CREATE.DM_main.dm_U1"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			audit, err := json.Marshal(server.JSAPIAudit{TypedEvent: server.TypedEvent{Type: server.JSAPIAuditType},
				Server: "cotal", Client: &server.ClientInfo{User: "U1"}, Subject: tt.subject,
				Request: tt.request, Response: `{"type":"io.nats.jetstream.api.v1.consumer_create_response"}`})
			if err != nil {
				t.Fatal(err)
			}
			if got := auditsConsumerCreate(audit); got != tt.want {
				t.Errorf("auditsConsumerCreate = %v for %s, want %v", got, audit, tt.want)
			}
		})
	}
}
