package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
)

func TestActionsValidateLikeTheCLI(t *testing.T) {
	f := newFixture(t)
	f.send(t, f.alice, "so that general has a message")
	for _, tc := range []struct {
		name   string
		path   string
		form   url.Values
		status int
		want   string
	}{
		{"a mint with an unknown profile is refused", "/act/mint", url.Values{"name": {"carol"}, "profile": {"wizard"}}, 400, "wizard"},
		{"a mint without a name is refused", "/act/mint", url.Values{"profile": {"agent"}}, 400, "name"},
		{"a mint with a lifetime that is no duration is refused", "/act/mint", url.Values{"name": {"carol"}, "profile": {"agent"}, "expiresIn": {"soon"}}, 400, "use e.g. 90m, 12h or 7d"},
		{"a mint with a subscribe outside its allowSubscribe is refused", "/act/mint", url.Values{"name": {"carol"}, "profile": {"agent"}, "subscribe": {"ops"}, "allowSubscribe": {"general"}}, 400, "ops"},
		{"a mint answers the .creds file", "/act/mint", url.Values{"name": {"carol"}, "profile": {"agent"}, "subscribe": {"general"}, "expiresIn": {"7d"}, "provision": {"1"}}, 201, "BEGIN NATS USER JWT"},
		{"a revoke of an unknown id is not found", "/act/revoke", url.Values{"id": {"UNKNOWN"}}, 404, "UNKNOWN"},
		{"a channel class that is no class is refused", "/act/channel", url.Values{"channel": {"general"}, "class": {"sometimes"}}, 400, "sometimes"},
		{"a replay that is not on or off is refused", "/act/channel", url.Values{"channel": {"general"}, "replay": {"maybe"}}, 400, "use on or off"},
		{"a change that changes nothing is refused", "/act/channel", url.Values{"channel": {"general"}}, 400, "nothing to change"},
		{"a channel with no message and no config is unknown", "/act/channel", url.Values{"channel": {"genral"}, "class": {"live"}}, 404, `\"genral\": space main has no message on it and no config for it; check the name, or tick \"create\"`},
		{"a channel that is no channel is refused", "/act/channel", url.Values{"channel": {"a..b"}, "class": {"live"}}, 400, "a..b"},
		{"a channel with no message may be created", "/act/channel", url.Values{"channel": {"ops"}, "class": {"live"}, "create": {"1"}}, 200, `"deliveryClass":"live"`},
		{"a channel's class, replay and description are set", "/act/channel", url.Values{"channel": {"general"}, "class": {"live"}, "replay": {"off"}, "description": {"team chat"}}, 200, `"description":"team chat"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := f.do(t, request{method: http.MethodPost, path: tc.path, auth: "cookie", form: tc.form})
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("status %d body %s, want %d with %q", code, body, tc.status, tc.want)
			}
		})
	}
	t.Run("the channels view shows the new class and description", func(t *testing.T) {
		_, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/channels", auth: "cookie"})
		for _, w := range []string{`<td class="class">live</td>`, "team chat"} {
			if !strings.Contains(body, w) {
				t.Fatalf("no %q in %s", w, body)
			}
		}
	})
}

func TestAMintedCredentialCanBeRevoked(t *testing.T) {
	f := newFixture(t)
	code, body, h := f.do(t, request{method: http.MethodPost, path: "/act/mint", auth: "cookie",
		form: url.Values{"name": {"dave"}, "profile": {"observer"}}})
	if code != http.StatusCreated || h.Get("Content-Disposition") != `attachment; filename="dave.creds"` {
		t.Fatalf("mint: status %d disposition %q: %s", code, h.Get("Content-Disposition"), body)
	}
	id := h.Get("X-Cotal-Credential")
	code, body, _ = f.do(t, request{method: http.MethodPost, path: "/act/revoke", auth: "cookie", form: url.Values{"id": {id}}})
	if code != http.StatusOK {
		t.Fatalf("revoke: status %d: %s", code, body)
	}
	await.Check(t, 5*time.Second, 50*time.Millisecond, func() error {
		_, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/credentials", auth: "cookie"})
		row := body[strings.Index(body, `data-name="dave"`):]
		row = row[:strings.Index(row, "</tr>")]
		if !strings.Contains(row, ">revoked<") {
			return fmt.Errorf("dave's row %s does not say revoked", row)
		}
		return nil
	})
}

func TestTheConsoleCannotRevokeItself(t *testing.T) {
	f := newFixture(t)
	_, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/credentials", auth: "cookie"})
	i := strings.Index(body, `data-name="console"><td title="`)
	if i < 0 {
		t.Fatalf("no console credential in %s", body)
	}
	id := body[i+len(`data-name="console"><td title="`):]
	id = id[:strings.Index(id, `"`)]
	if row := body[i:]; strings.Contains(row[:strings.Index(row, "</tr>")], "/act/revoke") {
		t.Errorf("the console's own row offers revoke: %s", row[:strings.Index(row, "</tr>")])
	}
	code, body, _ := f.do(t, request{method: http.MethodPost, path: "/act/revoke", auth: "cookie", form: url.Values{"id": {id}}})
	if code != http.StatusBadRequest || !strings.Contains(body, "console's own credential") {
		t.Fatalf("status %d: %s, want 400 naming the console's own credential", code, body)
	}
}
