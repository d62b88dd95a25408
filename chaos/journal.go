package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
)

// The events a journal records.
const (
	// EventAttempt is written before a publish is sent: its outcome is not known yet.
	EventAttempt = "attempt"
	// EventAcked is written once JetStream stored the publish (endpoint.Receipt): from here
	// on the message must reach its audience (SPEC §4).
	EventAcked = "acked"
	// EventFailed is written when a publish returned an error: it may or may not have been
	// stored, and either outcome is allowed.
	EventFailed = "failed"
	// EventSurfaced is written by a receiver's Handler for every message it surfaced.
	EventSurfaced = "surfaced"
	// EventJoined is written by a receiver once a channel is joined; Kind is the
	// endpoint.JoinState reached.
	EventJoined = "joined"
)

// The publish kinds of an attempt, one per delivery mode of SPEC §4.
const (
	KindDM      = "dm"
	KindAnycast = "anycast"
	KindChannel = "channel"
)

// Entry is one journal line.
type Entry struct {
	// Event is one of EventAttempt, EventAcked, EventFailed and EventSurfaced.
	Event string `json:"event"`
	// ID is the message id (SPEC §5).
	ID string `json:"id"`
	// Kind is KindDM, KindAnycast or KindChannel for a publish; for a surfacing, the delivery
	// kind the receiver derived from the subject (endpoint.MetaKind); for a join, the state
	// reached (endpoint.JoinState).
	Kind string `json:"kind,omitempty"`
	// Target is the instance id, role or channel a publish was addressed to, or the channel
	// of a surfacing or a join.
	Target string `json:"target,omitempty"`
	// Seq is the stream sequence of an acknowledged publish.
	Seq uint64 `json:"seq,omitempty"`
	// Receiver is the instance id that surfaced the message.
	Receiver string `json:"receiver,omitempty"`
	// Incarnation names the process or connection of the receiver that surfaced it; a receiver
	// restarted after a crash is a new incarnation with a fresh deduplication window.
	Incarnation string `json:"incarnation,omitempty"`
	// Durable and Historical copy the surfaced message's endpoint.Meta.
	Durable    bool `json:"durable,omitempty"`
	Historical bool `json:"historical,omitempty"`
	// Err says why a publish failed.
	Err string `json:"err,omitempty"`
}

// Journal appends entries to a file as JSON lines. Each entry is one write(2) on a file
// opened for appending, so a process killed at any instruction leaves whole lines behind,
// except at worst a torn last one, which ReadJournal skips. It is safe for concurrent use.
type Journal struct {
	mu sync.Mutex
	f  *os.File
}

// OpenJournal opens path for appending, creating it with mode 0600.
func OpenJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	return &Journal{f: f}, nil
}

// Write appends e. The line reaches the kernel before Write returns, so it survives the
// writer being killed right after; it is not fsynced, since the machine is not what crashes.
func (j *Journal) Write(e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode journal entry: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	return nil
}

// Close closes the file.
func (j *Journal) Close() error { return j.f.Close() }

// ErrTornJournal is returned by ReadJournal for a line that does not decode anywhere but at
// the end: only a killed writer's last line may be torn.
var ErrTornJournal = errors.New("journal has a line that does not decode before its end")

// ReadJournal reads every entry of the journal at path. A missing file is an empty journal:
// the process may have been killed before it wrote anything.
func ReadJournal(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	var out []Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			if !bytes.HasSuffix(data, []byte("\n")) && !sc.Scan() {
				break // the torn last line of a killed writer
			}
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrTornJournal, path, line, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
