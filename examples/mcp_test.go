package examples_test

import (
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// buildCotal builds the cotal binary the mcp example runs as `cotal mcp`, once per test run,
// into the examples' build directory.
var buildCotal = sync.OnceValues(func() (string, error) {
	dir, err := buildExamples()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "cotal")
	if out, err := exec.Command("go", "build", "-ldflags=-w", "-o", path, "github.com/cotal-go/cotal").CombinedOutput(); err != nil {
		return "", &buildFailure{out: string(out), err: err}
	}
	return path, nil
})

type buildFailure struct {
	out string
	err error
}

func (e *buildFailure) Error() string { return "build cotal: " + e.err.Error() + "\n" + e.out }

// TestMCPExampleTwoAgentsTalkThroughCotalMCP runs the mcp example with a freshly built cotal:
// two `cotal mcp` processes exchange a DM, a post and an anycast through their tools.
func TestMCPExampleTwoAgentsTalkThroughCotalMCP(t *testing.T) {
	bin(t, "mcp")
	cotal, err := buildCotal()
	if err != nil {
		t.Fatal(err)
	}
	requireLines(t, run(t, "mcp", "--cotal", cotal),
		`mesh listening: cotal://127\.0\.0\.1:\d+/main`,
		`alice called cotal_dm`,
		`bob's inbox: dm from alice: hello bob, this is alice`,
		`bob called cotal_send`,
		`alice's inbox: channel on #general from bob: hi everyone, bob here`,
		`alice called cotal_anycast`,
		`bob's inbox: anycast from alice: please review PR 12`)
}
