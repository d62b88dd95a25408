package space_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// oldLayout is a data directory written by main at 4312a9a, before a space had a storage
// account: `cotal up` on disk, agents alice and bob minted (no expiry), three posts of alice
// on general and one DM to alice, then a clean stop. alice.creds.old is her credential then.
const oldLayout = "testdata/datadir-4312a9a"

// TestADataDirectoryFromBeforeTheAccountSplitStarts: a mesh starts on the single-account
// layout, keeps every stream, refuses the credentials minted in what became the storage
// account and says which to mint again; minted again with its own key, an agent keeps its id,
// its history and its waiting DM. A second start does not split again.
func TestADataDirectoryFromBeforeTheAccountSplitStarts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(oldLayout)); err != nil {
		t.Fatal(err)
	}
	old := oldCredential(t, filepath.Join(dir, "alice.creds.old"))
	logs := &testlog.Buffer{}
	m, err := space.Start(ctx, space.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatalf("start on the old layout: %v", err)
	}
	for _, want := range []string{"upgraded the space to a separate storage account", "name=alice", "name=bob", "count=2"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the start log lacks %q:\n%s", want, logs)
		}
	}
	refusedConnect(t, m, old)

	kp, err := nkeys.FromSeed(old.Seed)
	if err != nil {
		t.Fatal(err)
	}
	alice := mintWith(t, m, provisioner.MintRequest{Space: "main", Name: "alice", Profile: provisioner.ProfileAgent, NoExpiry: true,
		Identity: kp, Grants: provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}})
	if alice.ID != old.ID {
		t.Fatalf("minted again, alice is %s, was %s", alice.ID, old.ID)
	}
	dms := make(chan string, 4)
	creds, err := alice.Creds()
	if err != nil {
		t.Fatal(err)
	}
	ep, err := endpoint.Connect(ctx, endpoint.Options{InProcess: m.InProcess(), Space: "main", Creds: creds, Name: "alice",
		Handler: func(_ context.Context, d endpoint.Delivery) error {
			if d.Meta.Channel == "" {
				dms <- d.Message.Parts[0].Text
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close(ctx)
	history, err := ep.History(ctx, "general", 10)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, d := range history {
		texts = append(texts, d.Message.Parts[0].Text)
	}
	if want := []string{"hello 1 from alice", "hello 2 from alice", "hello 3 from alice"}; !slices.Equal(texts, want) {
		t.Errorf("general's history after the upgrade = %q, want %q", texts, want)
	}
	select {
	case text := <-dms:
		if text != "dm by id" {
			t.Errorf("alice's waiting DM = %q, want %q", text, "dm by id")
		}
	case <-ctx.Done():
		t.Fatal("alice's DM stored before the upgrade never arrived")
	}
	if err := errors.Join(ep.Close(ctx), m.Close(ctx)); err != nil {
		t.Fatal(err)
	}

	logs = &testlog.Buffer{}
	again, err := space.Start(ctx, space.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatalf("second start: %v", err)
	}
	defer again.Close(ctx)
	if strings.Contains(logs.String(), "upgraded") {
		t.Errorf("a second start split the space again:\n%s", logs)
	}
}

// oldCredential reads a .creds file as a credential to dial with.
func oldCredential(t *testing.T, path string) *provisioner.Credential {
	t.Helper()
	contents, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.ParseDecoratedJWT(contents)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := jwt.ParseDecoratedNKey(contents)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	id, _ := kp.PublicKey()
	return &provisioner.Credential{ID: id, Name: "alice", JWT: token, Seed: seed}
}
