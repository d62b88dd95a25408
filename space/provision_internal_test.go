package space

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsfault"
	"github.com/cotal-go/cotal/wire"
)

// chatStream starts a memory mesh and returns the runtime of its space main and its CHAT
// stream, whose config the provisioning tests ask for again.
func chatStream(t *testing.T) (*spaceRuntime, jetstream.Stream) {
	t.Helper()
	m := startTestMesh(t, Options{Memory: true})
	rt, err := m.runtime("main")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	chat, err := rt.js.Stream(ctx, rt.names.ChatStream())
	if err != nil {
		t.Fatal(err)
	}
	return rt, chat
}

// TestAStreamRequestWhoseAnswerIsLostIsAskedAgain: provisioning under a start deadline asks
// again once one request has waited its own bound, instead of spending the whole deadline
// on an answer that will not come.
func TestAStreamRequestWhoseAnswerIsLostIsAskedAgain(t *testing.T) {
	t.Parallel()
	rt, chat := chatStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	lossy := &jsfault.LoseFirst{JetStream: rt.js}
	st, err := ensureStream(ctx, lossy, chat.CachedInfo().Config, false, 300*time.Millisecond)
	if err != nil {
		t.Fatalf("provisioning with its first answer lost: %v", err)
	}
	if got := lossy.Asked(); got != 2 {
		t.Errorf("asked %d times, want 2", got)
	}
	if st.CachedInfo().Config.Name != rt.names.ChatStream() {
		t.Errorf("got stream %s", st.CachedInfo().Config.Name)
	}
}

// TestAMintsAndAStartsLostAnswersAreAskedAgain: the bind-only consumer creates of a mint and
// the `=defaults` write of a start ask again after requestTimeout instead of failing at their
// caller's deadline when a clustered metadata leader drops the request unanswered.
func TestAMintsAndAStartsLostAnswersAreAskedAgain(t *testing.T) {
	t.Parallel()
	m := startTestMesh(t, Options{Memory: true})
	rt, err := m.runtime("main")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		ask   func(ctx context.Context, js jetstream.JetStream) error
		asked int64
	}{
		{"the bind-only consumers of a mint", func(ctx context.Context, js jetstream.JetStream) error {
			return provisionInstance(ctx, js, rt.names, "ULOSTANSWER", "", time.Minute)
		}, 3},
		{"the =defaults record of a start", func(ctx context.Context, js jetstream.JetStream) error {
			return writeDefaults(ctx, js, rt.names, wire.DeliveryDurable)
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*requestTimeout)
			defer cancel()
			lossy := &jsfault.LoseFirst{JetStream: rt.js}
			if err := tt.ask(ctx, lossy); err != nil {
				t.Fatalf("with its first answer lost: %v", err)
			}
			if got := lossy.Asked(); got != tt.asked {
				t.Errorf("asked %d times, want %d", got, tt.asked)
			}
		})
	}
}

// refuseFirstStore is a JetStream whose first stream create-or-update is refused with refusal,
// the way a cluster member refuses a stream assignment while the cluster settles. Later
// requests reach the single node under it as one replica, standing in for the stream the other
// members took.
type refuseFirstStore struct {
	jetstream.JetStream
	refusal *jetstream.APIError
	asked   int
}

func (j *refuseFirstStore) CreateOrUpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	if j.asked++; j.asked == 1 {
		return nil, j.refusal
	}
	cfg.Replicas = 1
	return j.JetStream.CreateOrUpdateStream(ctx, cfg)
}

// TestAReplicaRefusingItsStoreIsAskedAgain: a replicated stream that one member refused while
// the cluster settled (its store, or an account it has not looked up yet) is asked for again;
// a single node's own store refusal is not, since nothing else will take it.
func TestAReplicaRefusingItsStoreIsAskedAgain(t *testing.T) {
	t.Parallel()
	rt, chat := chatStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	store := &jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "error creating store for stream"}
	account := &jetstream.APIError{Code: 503, ErrorCode: 10035, Description: "account not found"}
	for _, tt := range []struct {
		refusal   *jetstream.APIError
		replicas  int
		wantAsked int
		wantErr   bool
	}{{store, 3, 2, false}, {store, 1, 1, true}, {account, 3, 2, false}} {
		cfg := chat.CachedInfo().Config
		cfg.Replicas = tt.replicas
		js := &refuseFirstStore{JetStream: rt.js, refusal: tt.refusal}
		_, err := ensureStream(ctx, js, cfg, false, time.Second)
		if (err != nil) != tt.wantErr || js.asked != tt.wantAsked {
			t.Errorf("%s, %d replicas: asked %d times, err %v; want %d times, an error %v",
				tt.refusal.Description, tt.replicas, js.asked, err, tt.wantAsked, tt.wantErr)
		}
	}
}

// leaderlessFirst is a JetStream whose buckets answer their first create the way a just-made
// replicated bucket does before it has a leader: no stream answers.
type leaderlessFirst struct {
	jetstream.JetStream
	creates int
}

func (j *leaderlessFirst) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	kv, err := j.JetStream.KeyValue(ctx, bucket)
	if err != nil {
		return nil, err
	}
	return &leaderlessKV{KeyValue: kv, js: j}, nil
}

type leaderlessKV struct {
	jetstream.KeyValue
	js *leaderlessFirst
}

func (k *leaderlessKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if k.js.creates++; k.js.creates == 1 {
		return 0, jetstream.ErrNoStreamResponse
	}
	return k.KeyValue.Create(ctx, key, value, opts...)
}

// TestTheDefaultsRecordWaitsOutALeaderlessBucket: a cluster's start failed when the channel
// registry, created a moment before, had no leader to store `=defaults`; the write is asked
// again, and finds the record there.
func TestTheDefaultsRecordWaitsOutALeaderlessBucket(t *testing.T) {
	t.Parallel()
	rt, _ := chatStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	js := &leaderlessFirst{JetStream: rt.js}
	if err := writeDefaults(ctx, js, rt.names, wire.DeliveryDurable); err != nil || js.creates != 2 {
		t.Fatalf("created %d times, err %v; want 2 times, no error", js.creates, err)
	}
}
