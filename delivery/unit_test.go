package delivery

import (
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/wire"
)

const (
	aliceID = "UAQGWOEVJKMIO4WXSYOTLARXYOZTCXFK67JASEH6AFFFYK6FOPSKQCAD"
	bobID   = "UDI36ZKVNUM5WMO4QQ6HDQU7F4OH2RCXOJRX6GAIOS5SKVNNSKCDNLJA"
)

func sampleMessage(t *testing.T) []byte {
	t.Helper()
	m := wire.NewChannelMessage("main", wire.EndpointRef{ID: aliceID, Name: "alice"}, "team.backend",
		wire.Part{Kind: "text", Text: "Can you review this?"})
	return mustJSON(t, m)
}

func TestEntryEncoding(t *testing.T) {
	msg := sampleMessage(t)
	valid := entry{Msg: msg, Channel: "team.backend", Seq: 7, Reason: ReasonDurableChannel, Generation: 2}
	t.Run("an entry round-trips with its message byte for byte", func(t *testing.T) {
		e, m, err := decodeEntry(mustJSON(t, valid))
		if err != nil {
			t.Fatal(err)
		}
		if e.Channel != valid.Channel || e.Seq != 7 || e.Generation != 2 || e.Reason != ReasonDurableChannel ||
			string(e.Msg) != string(msg) || m.Channel != "team.backend" {
			t.Fatalf("decoded %+v", e)
		}
	})
	t.Run("the fan-out's encoding matches encoding/json's and keeps the message verbatim", func(t *testing.T) {
		spaced := append([]byte(" "), msg...) // valid JSON that encoding/json would compact
		for _, raw := range [][]byte{msg, spaced} {
			head, err := newEntryHead(raw, "team.backend", 7, ReasonLiveMention)
			if err != nil {
				t.Fatal(err)
			}
			data := head.entry(0)
			if _, ok := parseEntryLayout(data); !ok {
				t.Fatalf("the layout reader does not read the fan-out's own entry %s", data)
			}
			var generic map[string]any
			if err := json.Unmarshal(data, &generic); err != nil {
				t.Fatalf("entry %s is not JSON: %v", data, err)
			}
			e, _, err := decodeEntry(data)
			if err != nil {
				t.Fatal(err)
			}
			if e.Channel != "team.backend" || e.Seq != 7 || e.Generation != 0 || e.Reason != ReasonLiveMention ||
				string(e.Msg) != strings.TrimSpace(string(raw)) {
				t.Fatalf("decoded %+v from %s", e, data)
			}
		}
		if got, want := string(newEntryHeadOrFail(t, msg).entry(2)), string(mustJSON(t, valid)); got != want {
			t.Fatalf("entry\n%s\nwant encoding/json's\n%s", got, want)
		}
	})
	broken := func(f func(*entry)) []byte {
		e := valid
		f(&e)
		return mustJSON(t, e)
	}
	refused := []struct {
		name string
		data []byte
	}{
		{"a JetStream acknowledgement is refused", []byte(`{"stream":"INBOX_main","seq":3}`)},
		{"invalid JSON is refused", []byte(`{"msg":`)},
		{"an entry without a message is refused", broken(func(e *entry) { e.Msg = nil })},
		{"a wildcard channel is refused", broken(func(e *entry) { e.Channel = "team.>" })},
		{"an unsanitized channel is refused", broken(func(e *entry) { e.Channel = "team/backend" })},
		{"a zero sequence is refused", broken(func(e *entry) { e.Seq = 0 })},
		{"an unknown reason is refused", broken(func(e *entry) { e.Reason = "because" })},
		{"a message that is not a CotalMessage is refused", broken(func(e *entry) { e.Msg = json.RawMessage(`{"id":"x"}`) })},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := decodeEntry(tc.data); !errors.Is(err, errInvalidEntry) {
				t.Fatalf("decodeEntry = %v, want errInvalidEntry", err)
			}
		})
	}
	t.Run("message ids are scoped per member, and INBOX ids per generation", func(t *testing.T) {
		if got := entryMsgID("m1", bobID, 3); got != "m1:"+bobID+":3" {
			t.Fatalf("entryMsgID = %q", got)
		}
		if dlvMsgID("m1", aliceID) == dlvMsgID("m1", bobID) {
			t.Fatal("two members' DLV copies share a Nats-Msg-Id; JetStream would drop the second")
		}
	})
}

func TestMembershipEligibility(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	rec := func(owner string, join uint64, leave *uint64, gen uint64) wire.Membership {
		return wire.Membership{Channel: "team", Owner: owner, State: wire.MemberDurableActive,
			JoinCursor: join, LeaveCursor: leave, Generation: gen, WriterIdentity: WriterIdentity}
	}
	v := newMemberView()
	v.putLocked(member{rec: rec(aliceID, 10, nil, 1)})
	v.putLocked(member{rec: rec(bobID, 50, nil, 3), past: []pastInterval{{Generation: 2, JoinCursor: 10, LeaveCursor: 20}}})
	v.putLocked(member{rec: rec("CAROL", 10, u(30), 1)})

	route := []struct {
		name   string
		sender string
		seq    uint64
		want   []recipient
	}{
		{"the join cursor itself is not eligible", "X", 10, nil},
		{"a message inside every open interval reaches each member but the sender", aliceID, 15,
			[]recipient{{id: "CAROL", generation: 1}, {id: bobID, generation: 2}}},
		{"a message in a closed past interval is tagged with that generation", "X", 20,
			[]recipient{{id: "CAROL", generation: 1}, {id: aliceID, generation: 1}, {id: bobID, generation: 2}}},
		{"the leave cursor is the last eligible sequence", "X", 30,
			[]recipient{{id: "CAROL", generation: 1}, {id: aliceID, generation: 1}}},
		{"after the leave cursor the member gets nothing", "X", 31, []recipient{{id: aliceID, generation: 1}}},
		{"between a leave and a rejoin cursor nothing is eligible", "X", 40, []recipient{{id: aliceID, generation: 1}}},
		{"after the rejoin cursor the current generation applies", "X", 51,
			[]recipient{{id: aliceID, generation: 1}, {id: bobID, generation: 3}}},
	}
	for _, tc := range route {
		t.Run(tc.name, func(t *testing.T) {
			got := v.eligibleLocked(nil, "team", tc.sender, tc.seq)
			slices.SortFunc(got, func(a, b recipient) int { return compareStrings(a.id, b.id) })
			slices.SortFunc(tc.want, func(a, b recipient) int { return compareStrings(a.id, b.id) })
			if !slices.Equal(got, tc.want) {
				t.Fatalf("eligible(%d) = %+v, want %+v", tc.seq, got, tc.want)
			}
		})
	}
	authorize := []struct {
		name     string
		owner    string
		gen, seq uint64
		want     bool
	}{
		{"an entry inside the current interval is authorized", bobID, 3, 51, true},
		{"an entry of an earlier generation is authorized", bobID, 2, 15, true},
		{"an entry of a generation never reached is not", bobID, 4, 51, false},
		{"an entry after the leave cursor is not", "CAROL", 1, 31, false},
		{"an entry of a member with no record is not", "NOBODY", 1, 31, false},
	}
	for _, tc := range authorize {
		t.Run(tc.name, func(t *testing.T) {
			if got := v.authorizes("team", tc.owner, tc.gen, tc.seq); got != tc.want {
				t.Fatalf("authorizes = %v, want %v", got, tc.want)
			}
		})
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestClosePast(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	open := member{rec: wire.Membership{JoinCursor: 10, Generation: 2},
		past: []pastInterval{{Generation: 1, JoinCursor: 1, LeaveCursor: 5}}}
	left := member{rec: wire.Membership{JoinCursor: 10, LeaveCursor: u(20), Generation: 2}}
	tests := []struct {
		name   string
		prev   member
		had    bool
		cursor uint64
		floor  uint64
		want   []pastInterval
	}{
		{"a first join keeps nothing", member{}, false, 30, 0, nil},
		{"an open membership is closed at the new cursor", open, true, 30, 0,
			[]pastInterval{{1, 1, 5}, {2, 10, 30}}},
		{"a left membership is closed at its leave cursor", left, true, 30, 0, []pastInterval{{2, 10, 20}}},
		{"intervals the fan-out has acknowledged past are dropped", open, true, 30, 5, []pastInterval{{2, 10, 30}}},
		{"an empty interval is dropped", member{rec: wire.Membership{JoinCursor: 30, Generation: 1}}, true, 30, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := closePast(tc.prev, tc.had, tc.cursor, tc.floor); !slices.Equal(got, tc.want) {
				t.Fatalf("closePast = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestResolveMention(t *testing.T) {
	now := time.Now()
	cache := newKVCache("presence", decodePresenceRow, &atomic.Int64{}, slog.New(slog.DiscardHandler))
	row := func(id, name string, status wire.PresenceStatus, ts time.Time) {
		cache.rows[id] = presenceRow{name: strings.ToLower(name), status: status, ts: ts.UnixMilli()}
	}
	row("B", "Bob", wire.StatusIdle, now)
	row("C1", "carol", wire.StatusWorking, now)
	row("C2", "Carol", wire.StatusIdle, now)
	row("D", "dave", wire.StatusIdle, now.Add(-time.Minute))
	row("D2", "dave", wire.StatusIdle, now) // the only present dave
	row("F", "frank", wire.StatusOffline, now)
	row("G", "gina", wire.StatusIdle, now.Add(-time.Hour))
	row("H1", "hal", wire.StatusOffline, now)
	row("H2", "hal", wire.StatusIdle, now.Add(-time.Hour))
	tests := []struct {
		name, mention string
		want          string
		ok            bool
	}{
		{"a unique present name resolves, case-insensitively", "bob", "B", true},
		{"a mention is lowercased before matching", " BOB ", "B", true},
		{"two present holders of a name resolve to nothing", "carol", "", false},
		{"a stale holder does not make a name ambiguous", "dave", "D2", true},
		{"a unique offline holder still resolves, so the copy waits for it", "frank", "F", true},
		{"a unique stale holder still resolves", "gina", "G", true},
		{"two holders none of them live resolve to nothing", "hal", "", false},
		{"an unknown name resolves to nothing", "zed", "", false},
		{"an empty name resolves to nothing", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := resolveMention(cache, nil, tc.mention, now)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("resolveMention(%q) = %q, %v; want %q, %v", tc.mention, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// mintedNames is a test NameSource.
type mintedNames map[string]string

func (m mintedNames) MintedName(id string) (string, bool) { n, ok := m[id]; return n, ok }

func (m mintedNames) MintedAs(name string) []string {
	var ids []string
	for id, n := range m {
		if strings.EqualFold(n, name) {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestResolveMentionByMintedNames: with the names credentials were minted with, a display
// name is worth nothing on its own: mallory calling herself bob gets no @bob copy, and the
// real bob gets it, online or never seen.
func TestResolveMentionByMintedNames(t *testing.T) {
	now := time.Now()
	cache := newKVCache("presence", decodePresenceRow, &atomic.Int64{}, slog.New(slog.DiscardHandler))
	cache.rows["M"] = presenceRow{name: "bob", status: wire.StatusIdle, ts: now.UnixMilli()}
	cache.rows["C"] = presenceRow{name: "carol", status: wire.StatusIdle, ts: now.UnixMilli()}
	names := mintedNames{"M": "mallory", "B": "Bob", "C": "carol", "D1": "dave", "D2": "dave"}
	tests := []struct {
		name, mention, want string
		ok                  bool
	}{
		{"a peer calling itself bob does not get bob's mention; bob, never seen, does", "bob", "B", true},
		{"mallory's minted name still reaches her while she shows another", "mallory", "M", true},
		{"a live holder whose minted name matches resolves", "carol", "C", true},
		{"two credentials minted under one name resolve to nothing", "dave", "", false},
		{"a name no credential carries resolves to nothing", "zed", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := resolveMention(cache, names, tc.mention, now)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("resolveMention(%q) = %q, %v; want %q, %v", tc.mention, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.Names, good.Conn, good.ACL = wire.NewNames("main"), &nats.Conn{}, newACLMap()
	tests := []struct {
		name string
		edit func(*Config)
		ok   bool
	}{
		{"a complete config is valid", func(*Config) {}, true},
		{"zero names are refused", func(c *Config) { c.Names = wire.Names{} }, false},
		{"a missing connection is refused", func(c *Config) { c.Conn = nil }, false},
		{"a missing ACL source is refused", func(c *Config) { c.ACL = nil }, false},
		{"zero retries are refused", func(c *Config) { c.UnknownMemberRetries = 0 }, false},
		{"a cap below the backoff is refused", func(c *Config) { c.MaxRestartBackoff = c.RestartBackoff / 2 }, false},
		{"negative control workers are refused", func(c *Config) { c.ControlWorkers = -1 }, false},
		{"a negative control queue is refused", func(c *Config) { c.ControlQueue = -1 }, false},
		{"a per-sender bound past the queue is refused", func(c *Config) { c.ControlPerSender = c.ControlQueue + 1 }, false},
		{"a per-sender bound equal to the queue is valid", func(c *Config) { c.ControlPerSender = c.ControlQueue }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			if err := c.Validate(); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	t.Run("zero tunables take the defaults", func(t *testing.T) {
		c := Config{}.withDefaults()
		d := DefaultConfig()
		if c.UnknownMemberRetries != d.UnknownMemberRetries || c.RestartBackoff != d.RestartBackoff || c.Logger == nil ||
			c.ControlWorkers != d.ControlWorkers || c.ControlQueue != d.ControlQueue || c.ControlPerSender != d.ControlPerSender {
			t.Fatalf("withDefaults = %+v", c)
		}
	})
}

func newEntryHeadOrFail(t *testing.T, msg []byte) entryHead {
	t.Helper()
	head, err := newEntryHead(msg, "team.backend", 7, ReasonDurableChannel)
	if err != nil {
		t.Fatal(err)
	}
	return head
}

// FuzzEntryLayout: an entry the layout reader accepts, with a message that decodes, is read by
// encoding/json to the same fields.
func FuzzEntryLayout(f *testing.F) {
	m := wire.NewChannelMessage("main", wire.EndpointRef{ID: aliceID, Name: "alice"}, "team.backend",
		wire.Part{Kind: "text", Text: `,"channel":"x","seq":1,"reason":"live-mention","generation":0}`})
	msg, err := m.AppendJSON(nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, reason := range []string{ReasonDurableChannel, ReasonLiveMention} {
		head, err := newEntryHead(msg, "team.backend", 7, reason)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(head.entry(3))
	}
	f.Add([]byte(`{"msg": {"id":"x"} ,"channel":"a","seq":1,"reason":"r","generation":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := parseEntryLayout(data)
		if !ok {
			return
		}
		if _, err := wire.DecodeMessage(fast.Msg); err != nil {
			return
		}
		var std entry
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("the layout reader accepted %q, encoding/json refuses it: %v", data, err)
		}
		if string(fast.Msg) != string(std.Msg) || fast.Channel != std.Channel || fast.Seq != std.Seq ||
			fast.Reason != std.Reason || fast.Generation != std.Generation {
			t.Fatalf("layout reader %+v, encoding/json %+v for %q", fast, std, data)
		}
	})
}
