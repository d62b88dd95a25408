package agentfile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cotal-go/cotal/internal/local"
)

// tree makes repo/.git, repo/.cotal/agents with a.md and b.md, repo/sub/.cotal/agents with
// a.md, and a user directory with c.md; it returns repo.
func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
	repo := filepath.Join(root, "repo")
	user, err := UserDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{
		filepath.Join(repo, ProjectDir, "a.md"), filepath.Join(repo, ProjectDir, "b.md"),
		filepath.Join(repo, "sub", ProjectDir, "a.md"), filepath.Join(user, "c.md"),
		filepath.Join(root, ProjectDir, "outside.md"),
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f[:len(f)-len(Ext)])
		if err := os.WriteFile(f, []byte("---\nname: "+name+"\n---\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	return repo
}

func TestSearchStopsAtTheRepositoryRoot(t *testing.T) {
	repo := tree(t)
	ds, err := Search(filepath.Join(repo, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	user, _ := UserDir()
	want := Dirs{filepath.Join(repo, "sub", ProjectDir), filepath.Join(repo, ProjectDir), user}
	if !reflect.DeepEqual(ds, want) {
		t.Fatalf("Search = %v, want %v", ds, want)
	}
	tests := []struct{ name, want string }{
		{"a", filepath.Join(repo, "sub", ProjectDir, "a.md")}, // the nearest wins
		{"b", filepath.Join(repo, ProjectDir, "b.md")},
		{"c", filepath.Join(user, "c.md")},
	}
	for _, tt := range tests {
		if got, err := ds.Find(tt.name); err != nil || got != tt.want {
			t.Errorf("Find(%s) = %s, %v; want %s", tt.name, got, err, tt.want)
		}
	}
	if _, err := ds.Find("outside"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find(outside) = %v; a file above the repository's root must not be found", err)
	}
	list, err := ds.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
	}
	if !reflect.DeepEqual(names, []string{"a", "b", "c"}) {
		t.Errorf("List names = %v, want a b c, each once", names)
	}
}

func TestFindRefusesANameThatLeavesTheDirectory(t *testing.T) {
	repo := tree(t)
	ds := Dirs{filepath.Join(repo, ProjectDir)}
	for _, name := range []string{"../x", "a/../b", ".", "a\nb", ""} {
		if _, err := ds.Find(name); !errors.Is(err, ErrInvalid) {
			t.Errorf("Find(%q) = %v, want ErrInvalid", name, err)
		}
	}
}

func TestLoadRefusesWhatOthersCouldWrite(t *testing.T) {
	repo := tree(t)
	dir := filepath.Join(repo, ProjectDir)
	file := filepath.Join(dir, "a.md")
	if _, err := Load(file); err != nil {
		t.Fatalf("Load of a private file: %v", err)
	}
	tests := []struct {
		name string
		path string
		mode os.FileMode
	}{
		{"a group-writable file", file, 0o620},
		{"a world-writable file", file, 0o602},
		{"a group-writable agents directory", dir, 0o770},
		{"a world-writable .cotal directory", filepath.Dir(dir), 0o707},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fi, err := os.Stat(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(tt.path, tt.mode); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(tt.path, fi.Mode().Perm())
			if _, err := Load(file); !errors.Is(err, local.ErrUnsafePath) {
				t.Errorf("Load = %v, want local.ErrUnsafePath", err)
			}
			if tt.path != file {
				if _, err := (Dirs{dir}).List(); !errors.Is(err, local.ErrUnsafePath) {
					t.Errorf("List = %v, want local.ErrUnsafePath", err)
				}
			}
		})
	}
}
