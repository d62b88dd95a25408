package chaos_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cotal-go/cotal/chaos"
)

func TestCheckClassifiesEveryDelivery(t *testing.T) {
	aud := func(p chaos.Publish) chaos.Audience {
		switch p.Kind {
		case chaos.KindAnycast:
			return chaos.Audience{Receivers: []string{"r1", "r2"}, One: true}
		case chaos.KindChannel:
			return chaos.Audience{Receivers: []string{"r1"}, May: []string{"r2"}}
		}
		return chaos.Audience{Receivers: []string{p.Target}}
	}
	dm := func(id string, acked bool) chaos.Publish {
		return chaos.Publish{ID: id, Kind: chaos.KindDM, Target: "r1", Acked: acked}
	}
	anycast := func(id string) chaos.Publish {
		return chaos.Publish{ID: id, Kind: chaos.KindAnycast, Target: "w", Acked: true}
	}
	at := func(r, inc, id string) chaos.Surfacing { return chaos.Surfacing{Receiver: r, Incarnation: inc, ID: id} }
	for _, c := range []struct {
		name string
		pubs []chaos.Publish
		surf []chaos.Surfacing
		want chaos.Figures
	}{
		{"an acknowledged DM surfaced once is surfaced", []chaos.Publish{dm("a", true)},
			[]chaos.Surfacing{at("r1", "1", "a")}, chaos.Figures{Acked: 1, Expected: 1, Surfaced: 1}},
		{"an acknowledged DM never surfaced is lost", []chaos.Publish{dm("a", true)}, nil,
			chaos.Figures{Acked: 1, Expected: 1, Lost: 1}},
		{"an id surfaced twice by one incarnation is a duplicate", []chaos.Publish{dm("a", true)},
			[]chaos.Surfacing{at("r1", "1", "a"), at("r1", "1", "a")}, chaos.Figures{Acked: 1, Expected: 1, Surfaced: 1, Duplicates: 1}},
		{"an id surfaced again by a later incarnation is re-surfaced, not a duplicate", []chaos.Publish{dm("a", true)},
			[]chaos.Surfacing{at("r1", "1", "a"), at("r1", "2", "a")}, chaos.Figures{Acked: 1, Expected: 1, Surfaced: 1, Resurfaced: 1}},
		{"an id nobody published is unexpected", nil, []chaos.Surfacing{at("r1", "1", "x")}, chaos.Figures{Unexpected: 1}},
		{"a DM surfaced by another receiver than its target is unexpected", []chaos.Publish{dm("a", true)},
			[]chaos.Surfacing{at("r1", "1", "a"), at("r2", "1", "a")}, chaos.Figures{Acked: 1, Expected: 1, Surfaced: 1, Unexpected: 1}},
		{"an anycast is owed once and surfaced by one holder", []chaos.Publish{anycast("a")},
			[]chaos.Surfacing{at("r2", "1", "a")}, chaos.Figures{Acked: 1, Expected: 1, Surfaced: 1}},
		{"an anycast surfaced by two holders counts an extra holder", []chaos.Publish{anycast("a")},
			[]chaos.Surfacing{at("r1", "1", "a"), at("r2", "1", "a")}, chaos.Figures{Acked: 1, Expected: 1, Surfaced: 1, ExtraHolders: 1}},
		{"an anycast surfaced by no holder is lost once", []chaos.Publish{anycast("a")}, nil,
			chaos.Figures{Acked: 1, Expected: 1, Lost: 1}},
		{"an unacknowledged publish may surface or not", []chaos.Publish{dm("a", false), dm("b", false)},
			[]chaos.Surfacing{at("r1", "1", "a")}, chaos.Figures{Unacked: 2, UnackedSurfaced: 1}},
		{"attempts with one id are acknowledged if any was", []chaos.Publish{dm("a", false), dm("a", true)},
			[]chaos.Surfacing{at("r1", "1", "a")}, chaos.Figures{Acked: 1, Expected: 1, Surfaced: 1}},
		{"a receiver the publish may reach surfaces it without being owed it",
			[]chaos.Publish{{ID: "c", Kind: chaos.KindChannel, Target: "ch", Acked: true}},
			[]chaos.Surfacing{at("r1", "1", "c"), at("r2", "1", "c")}, chaos.Figures{Acked: 1, Expected: 1, Surfaced: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := chaos.Check(c.pubs, c.surf, aud)
			got.Examples = nil
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Check = %+v, want %+v", got, c.want)
			}
			broken := c.want.Lost+c.want.Duplicates+c.want.Unexpected > 0
			if err := chaos.Check(c.pubs, c.surf, aud).Err(); broken != errors.Is(err, chaos.ErrGuaranteeBroken) {
				t.Fatalf("Err() = %v with %+v", err, c.want)
			}
		})
	}
}

func TestJournalSurvivesAWriterKilledMidLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name    string
		content string
		want    int
		err     error
	}{
		{"a missing journal is empty", "", 0, nil},
		{"whole lines are read", `{"event":"acked","id":"a"}` + "\n" + `{"event":"surfaced","id":"a"}` + "\n", 2, nil},
		{"a torn last line is skipped", `{"event":"acked","id":"a"}` + "\n" + `{"event":"surf`, 1, nil},
		{"a torn line before the end is an error", `{"event":"ack` + "\n" + `{"event":"acked","id":"a"}` + "\n", 0, chaos.ErrTornJournal},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			if c.content != "" {
				if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := chaos.ReadJournal(path)
			if !errors.Is(err, c.err) || (err == nil && len(got) != c.want) {
				t.Fatalf("ReadJournal = %d entries, %v; want %d, %v", len(got), err, c.want, c.err)
			}
		})
	}
	path := filepath.Join(dir, "written")
	j, err := chaos.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Write(chaos.Entry{Event: chaos.EventAcked, ID: "x", Seq: 7}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := chaos.ReadJournal(path)
	if err != nil || len(got) != 1 || got[0].ID != "x" || got[0].Seq != 7 {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}
