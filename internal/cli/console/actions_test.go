package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
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
			code, body, _ := f.do(t, request{method: http.MethodPost, path: tc.path, auth: "session", form: tc.form})
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("status %d body %s, want %d with %q", code, body, tc.status, tc.want)
			}
		})
	}
	t.Run("the channels view shows the new class and description", func(t *testing.T) {
		_, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/channels", auth: "session"})
		for _, w := range []string{`<td class="class">live</td>`, "team chat"} {
			if !strings.Contains(body, w) {
				t.Fatalf("no %q in %s", w, body)
			}
		}
	})
}

func TestADescriptionIsClearedOnlyWhenAsked(t *testing.T) {
	f := newFixture(t)
	f.send(t, f.alice, "so that general has a message")
	for _, tc := range []struct {
		name          string
		form          url.Values
		status        int
		want, without string
	}{
		{"a description is set", url.Values{"channel": {"general"}, "description": {"team chat"}}, 200, "team chat", ""},
		{"an empty description field keeps it", url.Values{"channel": {"general"}, "class": {"live"}}, 200, "team chat", ""},
		{"a description and clear together are refused", url.Values{"channel": {"general"}, "description": {"new"}, "clearDescription": {"1"}}, 400, "choose one", ""},
		{"clear description empties it", url.Values{"channel": {"general"}, "clearDescription": {"1"}}, 200, `"deliveryClass":"live"`, "team chat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := f.do(t, request{method: http.MethodPost, path: "/act/channel", auth: "session", form: tc.form})
			if code != tc.status || !strings.Contains(body, tc.want) || tc.without != "" && strings.Contains(body, tc.without) {
				t.Fatalf("status %d body %s, want %d with %q and without %q", code, body, tc.status, tc.want, tc.without)
			}
		})
	}
	t.Run("the channels view shows no description", func(t *testing.T) {
		if _, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/channels", auth: "session"}); strings.Contains(body, "team chat") {
			t.Fatalf("the cleared description is still shown: %s", body)
		}
	})
}

func TestAMintedCredentialCanBeRevoked(t *testing.T) {
	f := newFixture(t)
	code, body, h := f.do(t, request{method: http.MethodPost, path: "/act/mint", auth: "session",
		form: url.Values{"name": {"dave"}, "profile": {"observer"}}})
	if code != http.StatusCreated || h.Get("Content-Disposition") != `attachment; filename="dave.creds"` {
		t.Fatalf("mint: status %d disposition %q: %s", code, h.Get("Content-Disposition"), body)
	}
	id := h.Get("X-Cotal-Credential")
	code, body, _ = f.do(t, request{method: http.MethodPost, path: "/act/revoke", auth: "session", form: url.Values{"id": {id}}})
	if code != http.StatusOK {
		t.Fatalf("revoke: status %d: %s", code, body)
	}
	await.Check(t, 5*time.Second, 50*time.Millisecond, func() error {
		_, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/credentials", auth: "session"})
		row := body[strings.Index(body, `data-name="dave"`):]
		row = row[:strings.Index(row, "</tr>")]
		if !strings.Contains(row, ">revoked<") {
			return fmt.Errorf("dave's row %s does not say revoked", row)
		}
		return nil
	})
}

func TestTheConsoleCannotRevokeTheMeshsOwnCredentials(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// As `cotal up` reads each space's roster: a passive admin Endpoint in process.
	own, err := f.m.Endpoint(ctx, space.AgentSpec{Name: "cli-up-presence", Profile: provisioner.ProfileAdmin,
		Endpoint: endpoint.Options{Passive: true, Kind: wire.CardKindEndpoint}})
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/credentials", auth: "session"})
	revokeRefused := func(t *testing.T, id, refusal string) {
		code, resp, _ := f.do(t, request{method: http.MethodPost, path: "/act/revoke", auth: "session", form: url.Values{"id": {id}}})
		if code != http.StatusForbidden || !strings.Contains(resp, refusal) {
			t.Fatalf("status %d: %s, want 403 saying %q", code, resp, refusal)
		}
	}
	t.Run("console is shown as the mesh's own and its revoke is refused", func(t *testing.T) {
		prefix := `data-name="console"><td title="`
		i := strings.Index(body, prefix)
		if i < 0 {
			t.Fatalf("no console credential in %s", body)
		}
		id := body[i+len(prefix):]
		id = id[:strings.Index(id, `"`)]
		row := body[i:]
		row = row[:strings.Index(row, "</tr>")]
		if strings.Contains(row, `data-action="act/revoke"`) || !strings.Contains(row, ">active (this console)<") {
			t.Errorf("row %s offers revoke or does not say it is this console's", row)
		}
		revokeRefused(t, id, "the console's own credential")
	})
	t.Run("cli-up-presence is not listed and its revoke is refused", func(t *testing.T) {
		if strings.Contains(body, `data-name="cli-up-presence"`) {
			t.Errorf("the command's own credential is listed: %s", body)
		}
		revokeRefused(t, own.ID(), "cli-up-presence is valid inside the mesh's process only")
	})
	t.Run("an agent's credential is offered for revoking", func(t *testing.T) {
		row := body[strings.Index(body, `data-name="alice"`):]
		if row = row[:strings.Index(row, "</tr>")]; !strings.Contains(row, `data-action="act/revoke"`) {
			t.Fatalf("alice's row offers no revoke: %s", row)
		}
	})
}
