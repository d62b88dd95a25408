package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
)

// buildFakeRuntime builds internal/fakeruntime, the scripted MCP runtime, beside the cotal
// binary.
var buildFakeRuntime = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "fakeruntime")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/cotal-go/cotal/internal/fakeruntime").CombinedOutput()
	if err != nil {
		return "", &buildError{out: out, err: err}
	}
	return bin, nil
})

func fakeRuntimeBin(t *testing.T) string {
	t.Helper()
	cotalBin(t) // makes binDir
	bin, err := buildFakeRuntime()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// stepResult is one line a fakeruntime writes.
type stepResult struct {
	Step      string   `json:"step"`
	Tools     []string `json:"tools"`
	Text      string   `json:"text"`
	ToolError bool     `json:"toolError"`
	Err       string   `json:"err"`
}

// readSteps is what the fakeruntime writing to out has reported so far.
func readSteps(t *testing.T, out string) []stepResult {
	t.Helper()
	f, err := os.Open(out)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []stepResult
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r stepResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		steps = append(steps, r)
	}
	return steps
}

// awaitSteps waits until the fakeruntime writing to out has reported n steps.
func awaitSteps(t *testing.T, out string, n int) []stepResult {
	t.Helper()
	var steps []stepResult
	await.True(t, 90*time.Second, fmt.Sprintf("%d steps in %s", n, filepath.Base(out)), func() bool {
		steps = readSteps(t, out)
		return len(steps) >= n
	})
	return steps
}

const teamFile = `---
name: %s
description: a member of the test team
subscribe: [general]
allowPublish: [general]
---
You coordinate on general.
`

// TestATeamOfFakeRuntimesCoordinates starts two agents from their files under the supervisor,
// each a fakeruntime speaking MCP to cotal mcp as a runtime does: each orients, posts on
// general and reads the other's post from its inbox; then each is stopped and its credential
// revoked.
func TestATeamOfFakeRuntimesCoordinates(t *testing.T) {
	bin, fr := cotalBin(t), fakeRuntimeBin(t)
	project, mesh, outs := t.TempDir(), t.TempDir(), t.TempDir()
	startUp(t, bin, mesh)
	names := []string{"ann", "ben"}
	for i, name := range names {
		writeAgentFile(t, project, name, fmt.Sprintf(teamFile, name))
		other := names[1-i]
		out := filepath.Join(outs, name+".jsonl")
		steps := []string{"tools", "call:cotal_orientation:", "call:cotal_join:{\"channel\":\"general\"}",
			"call:cotal_send:{\"channel\":\"general\",\"text\":\"hello from " + name + "\"}",
			"await:hello from " + other, "hold"}
		if o, stderr, code := runIn(t, bin, project, nil, append([]string{"start", name, "--dir", mesh, "--",
			fr, "-out", out}, steps...)...); code != 0 {
			t.Fatalf("start %s: exit %d: %s%s", name, code, o, stderr)
		}
	}
	for _, name := range names {
		steps := awaitSteps(t, filepath.Join(outs, name+".jsonl"), 5)
		for _, s := range steps {
			if s.Err != "" || s.ToolError {
				t.Errorf("%s: step %s failed: %s %s", name, s.Step, s.Err, s.Text)
			}
		}
		if !slices.Contains(steps[0].Tools, "cotal_orientation") || !slices.Contains(steps[0].Tools, "cotal_inbox") {
			t.Errorf("%s lists tools %v", name, steps[0].Tools)
		}
		if card := steps[1].Text; !strings.Contains(card, name) || !strings.Contains(card, "general") {
			t.Errorf("%s's orientation does not name it and general:\n%s", name, card)
		}
	}
	var ids []string
	for _, name := range names {
		a, _ := psAgent(t, bin, mesh, name)
		ids = append(ids, a.ID)
		if o, stderr, code := runCotal(t, bin, "stop", name, "--dir", mesh); code != 0 {
			t.Fatalf("stop %s: exit %d: %s%s", name, code, o, stderr)
		}
	}
	for _, id := range ids {
		checkRevoked(t, bin, mesh, id)
	}
	if left := psAgents(t, bin, mesh); len(left) != 0 {
		t.Errorf("ps lists %v after every stop", left)
	}
}
