package wire

import (
	"errors"
	"reflect"
	"testing"
)

func TestACLRecordRoundTripAndEmptyList(t *testing.T) {
	tests := []struct {
		name string
		rec  ACLRecord
		json string
	}{
		{"a record with patterns", ACLRecord{AllowSubscribe: []string{"team.>", "general"}, Revision: 3, UpdatedAt: 17},
			`{"allowSubscribe":["team.\u003e","general"],"revision":3,"updatedAt":17}`},
		{"an ACL that reads nothing encodes []", ACLRecord{Revision: 1},
			`{"allowSubscribe":[],"revision":1,"updatedAt":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(mustMarshal(t, tt.rec)); got != tt.json {
				t.Fatalf("Marshal = %s, want %s", got, tt.json)
			}
			got, err := DecodeACLRecord([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if string(mustMarshal(t, got)) != tt.json {
				t.Fatalf("round trip = %s", mustMarshal(t, got))
			}
		})
	}
}

func TestDecodeACLRecordIsStrict(t *testing.T) {
	tests := []struct{ name, json string }{
		{"a JetStream PubAck written onto the record", `{"stream":"KV_cotal_acl_main","seq":9}`},
		{"a PubAck that also carries the fields", `{"stream":"x","seq":1,"allowSubscribe":[">"],"revision":1,"updatedAt":1}`},
		{"a JetStream error", `{"error":{"code":503}}`},
		{"an empty object", `{}`},
		{"a null allowSubscribe", `{"allowSubscribe":null,"revision":1,"updatedAt":1}`},
		{"a string allowSubscribe", `{"allowSubscribe":"team.>","revision":1,"updatedAt":1}`},
		{"a missing revision", `{"allowSubscribe":[],"updatedAt":1}`},
		{"a missing updatedAt", `{"allowSubscribe":[],"revision":1}`},
		{"a negative revision", `{"allowSubscribe":[],"revision":-1,"updatedAt":1}`},
		{"an unsanitized pattern", `{"allowSubscribe":["foo/bar"],"revision":1,"updatedAt":1}`},
		{"a malformed pattern", `{"allowSubscribe":["team.>.x"],"revision":1,"updatedAt":1}`},
		{"an empty pattern", `{"allowSubscribe":[""],"revision":1,"updatedAt":1}`},
		{"not JSON", `allowSubscribe=>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r, err := DecodeACLRecord([]byte(tt.json)); !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("DecodeACLRecord = %+v, %v; want ErrInvalidRecord", r, err)
			}
		})
	}
}

func TestACLRecordCovers(t *testing.T) {
	r := ACLRecord{AllowSubscribe: []string{"team.>", "general", "ops.*"}}
	tests := []struct {
		channel string
		want    bool
	}{
		{"general", true},
		{"team.backend", true},
		{"team.backend.db", true},
		{"team", false},
		{"ops.alerts", true},
		{"ops.alerts.x", false},
		{"random", false},
		{"team.*", false},
	}
	for _, tt := range tests {
		t.Run(tt.channel, func(t *testing.T) {
			if got := r.Covers(tt.channel); got != tt.want {
				t.Fatalf("Covers(%q) = %v, want %v", tt.channel, got, tt.want)
			}
		})
	}
	if (ACLRecord{AllowSubscribe: []string{}}).Covers("general") {
		t.Error("an empty ACL covers a channel")
	}
}

func vecMembership() Membership {
	leave := uint64(20)
	return Membership{Channel: "team.backend", Owner: vecBob, State: MemberDurableActive, JoinCursor: 10,
		Activated: true, LeaveCursor: &leave, Generation: 2, WriterIdentity: "delivery", UpdatedAt: 17}
}

func TestMembershipRoundTrip(t *testing.T) {
	joined := vecMembership()
	joined.LeaveCursor, joined.Activated = nil, false
	leftAtZero := vecMembership()
	leftAtZero.JoinCursor, leftAtZero.LeaveCursor = 0, new(uint64)
	for _, m := range []Membership{vecMembership(), joined, leftAtZero} {
		payload := mustMarshal(t, m)
		t.Run(string(payload), func(t *testing.T) {
			got, err := DecodeMembership(MemberKey(m.Channel, m.Owner), payload)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, m) {
				t.Fatalf("DecodeMembership = %+v, want %+v", *got, m)
			}
		})
	}
	if got := string(mustMarshal(t, joined)); got != `{"channel":"team.backend","owner":"`+vecBob+
		`","state":"durable-active","joinCursor":10,"generation":2,"writerIdentity":"delivery","updatedAt":17}` {
		t.Errorf("a joined membership encodes %s", got)
	}
}

func TestDecodeMembershipIsStrict(t *testing.T) {
	key := MemberKey("team.backend", vecBob)
	edit := func(f func(map[string]any)) []byte {
		var obj map[string]any
		mustUnmarshal(t, mustMarshal(t, vecMembership()), &obj)
		f(obj)
		return mustMarshal(t, obj)
	}
	tests := []struct {
		name    string
		key     string
		payload []byte
	}{
		{"a PubAck", key, []byte(`{"stream":"KV_cotal_members_main","seq":4}`)},
		{"another member's key", MemberKey("team.backend", vecAlice), edit(func(map[string]any) {})},
		{"another channel's key", MemberKey("team.frontend", vecBob), edit(func(map[string]any) {})},
		{"an unknown state", key, edit(func(o map[string]any) { o["state"] = "joined" })},
		{"a wildcard channel", MemberKey("team.>", vecBob), edit(func(o map[string]any) { o["channel"] = "team.>" })},
		{"an unsanitized channel", key, edit(func(o map[string]any) { o["channel"] = "team/backend" })},
		{"an empty owner", "team.backend/", edit(func(o map[string]any) { o["owner"] = "" })},
		{"a leave cursor before the join cursor", key, edit(func(o map[string]any) { o["leaveCursor"] = 9 })},
		{"an empty writer", key, edit(func(o map[string]any) { o["writerIdentity"] = "" })},
	}
	for _, field := range []string{"channel", "owner", "state", "joinCursor", "generation", "writerIdentity", "updatedAt"} {
		tests = append(tests, struct {
			name    string
			key     string
			payload []byte
		}{"a missing " + field, key, edit(func(o map[string]any) { delete(o, field) })})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m, err := DecodeMembership(tt.key, tt.payload); !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("DecodeMembership = %+v, %v; want ErrInvalidRecord", m, err)
			}
		})
	}
}

func TestMembershipEligibility(t *testing.T) {
	joined := vecMembership()
	joined.LeaveCursor = nil
	left := vecMembership() // join 10, leave 20
	tests := []struct {
		name string
		m    Membership
		seq  uint64
		want bool
	}{
		{"the join cursor itself is before the join", joined, 10, false},
		{"the next sequence is eligible", joined, 11, true},
		{"anything later is eligible while joined", joined, 1 << 40, true},
		{"the leave cursor itself is still eligible", left, 20, true},
		{"after the leave cursor is not", left, 21, false},
		{"inside the interval is eligible", left, 15, true},
		{"before the join is not", left, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.Eligible(tt.seq); got != tt.want {
				t.Fatalf("Eligible(%d) = %v, want %v", tt.seq, got, tt.want)
			}
		})
	}
}

func TestMemberKeys(t *testing.T) {
	if got := MemberKey("team backend.x", "dev.alice"); got != "team_backend.x/dev_alice" {
		t.Fatalf("MemberKey sanitizes to %q", got)
	}
	ch, id, err := ParseMemberKey(MemberKey("team.backend", vecBob))
	if err != nil || ch != "team.backend" || id != vecBob {
		t.Fatalf("ParseMemberKey = %q, %q, %v", ch, id, err)
	}
	for _, key := range []string{"", "team.backend", "/" + vecBob, "team.backend/", "team.>/" + vecBob,
		"team.backend/a/b", "team..x/" + vecBob} {
		t.Run(key, func(t *testing.T) {
			if _, _, err := ParseMemberKey(key); !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("ParseMemberKey(%q) = %v, want ErrInvalidRecord", key, err)
			}
		})
	}
}
