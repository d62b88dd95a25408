package agentfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cotal-go/cotal/internal/local"
)

// ErrNotFound means no agents directory holds a file of the name.
var ErrNotFound = errors.New("no agent file")

// Ext is the extension of an agent file.
const Ext = ".md"

// ProjectDir is where an agents directory sits in a project, relative to the project's root.
var ProjectDir = filepath.Join(".cotal", "agents")

// Dirs are agents directories, searched in order: the first that holds a name's file wins.
type Dirs []string

// Search is the agents directories seen from start: each ProjectDir from start up to the
// nearest directory holding .git (the repository's root) or else the filesystem's root,
// nearest first, then the user's (UserDir). Directories that do not exist are left out.
func Search(start string) (Dirs, error) {
	start, err := filepath.Abs(start)
	if err != nil {
		return nil, err
	}
	var ds Dirs
	for d := start; ; d = filepath.Dir(d) {
		if isDir(filepath.Join(d, ProjectDir)) {
			ds = append(ds, filepath.Join(d, ProjectDir))
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil || d == filepath.Dir(d) {
			break
		}
	}
	user, err := UserDir()
	if err != nil {
		return nil, err
	}
	if isDir(user) {
		ds = append(ds, user)
	}
	return ds, nil
}

// UserDir is the user's agents directory: os.UserConfigDir()/cotal/agents.
func UserDir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("agent files: %w", err)
	}
	return filepath.Join(base, "cotal", "agents"), nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Find is the path of name's file in the first of ds that holds one, or ErrNotFound.
func (ds Dirs) Find(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	for _, d := range ds {
		p := filepath.Join(d, name+Ext)
		if _, err := os.Lstat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w named %q in %s; `cotal personas new %s` creates one",
		ErrNotFound, name, ds.String(), name)
}

func (ds Dirs) String() string {
	if len(ds) == 0 {
		return "no agents directory (" + ProjectDir + " here or above, or the user's)"
	}
	return strings.Join(ds, ", ")
}

// Entry is a file in an agents directory: its name (the file's, without Ext) and path.
type Entry struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// List is every agent file of ds a name resolves to, by name: a file shadowed by one of the
// same name in an earlier directory is left out.
func (ds Dirs) List() ([]Entry, error) {
	seen := map[string]bool{}
	var out []Entry
	for _, d := range ds {
		if err := CheckDir(d); err != nil {
			return nil, err
		}
		files, err := os.ReadDir(d)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			name, ok := strings.CutSuffix(f.Name(), Ext)
			if !ok || CheckName(name) != nil || seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, Entry{Name: name, Path: filepath.Join(d, f.Name())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CheckDir refuses an agents directory, or the directory holding it, that another user owns
// or may write (local.CheckPrivateDir): its files could be swapped for ones that grant more.
func CheckDir(dir string) error {
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := local.CheckPrivateDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("agents directory %s: %w", d, err)
		}
	}
	return nil
}

// Load reads and parses the agent file at path under local.ReadPrivate's rule, its directory
// under CheckDir's: a file another user could have written is refused, not read.
func Load(path string) (*Agent, error) {
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	data, err := local.ReadPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("agent file %s: %w", path, err)
	}
	return Parse(path, data)
}
