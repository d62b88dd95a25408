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
	"syscall"
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
// each a fakeruntime speaking MCP to cotal mcp as a runtime does: each orients and posts on
// general, ann reads ben's post from her inbox and ben ann's from the history; then each is
// stopped and its credential revoked.
func TestATeamOfFakeRuntimesCoordinates(t *testing.T) {
	bin, fr := cotalBin(t), fakeRuntimeBin(t)
	project, mesh, outs := t.TempDir(), t.TempDir(), t.TempDir()
	startUp(t, bin, mesh)
	// ann is joined before ben starts, so ben's post reaches her inbox; ben, joining after
	// ann's post, reads it from the channel's history.
	names := []string{"ann", "ben"}
	steps := map[string][]string{
		"ann": {"tools", "call:cotal_orientation:", `call:cotal_join:{"channel":"general"}`,
			`call:cotal_send:{"channel":"general","text":"hello from ann"}`, "await:hello from ben", "hold"},
		"ben": {"tools", "call:cotal_orientation:", `call:cotal_join:{"channel":"general"}`,
			`call:cotal_send:{"channel":"general","text":"hello from ben"}`,
			`call:cotal_history:{"channel":"general"}`, "hold"},
	}
	for _, name := range names {
		writeAgentFile(t, project, name, fmt.Sprintf(teamFile, name))
		out := filepath.Join(outs, name+".jsonl")
		if o, stderr, code := runIn(t, bin, project, nil, append([]string{"start", name, "--dir", mesh, "--",
			fr, "-out", out}, steps[name]...)...); code != 0 {
			t.Fatalf("start %s: exit %d: %s%s", name, code, o, stderr)
		}
		awaitSteps(t, out, 4) // joined and posted
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
		if name == "ben" && !strings.Contains(steps[4].Text, "hello from ann") {
			t.Errorf("ben's history of general lacks ann's post:\n%s", steps[4].Text)
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

// TestATeamSpawnsThroughTheManagerAndLeavesNothingAfterAKill runs the lifecycle of the
// issue's fake runtime: lead, whose file grants spawn, spawns helper through cotal_spawn; the
// two coordinate on general; helper despawns itself; loner, whose file grants no capability,
// has no cotal_spawn and a call of it fails. Then the supervisor is killed with SIGKILL, and
// the next `cotal up` leaves no process of the team and no credential of it active.
func TestATeamSpawnsThroughTheManagerAndLeavesNothingAfterAKill(t *testing.T) {
	bin, fr := cotalBin(t), fakeRuntimeBin(t)
	project, mesh, dir := t.TempDir(), t.TempDir(), t.TempDir()
	up := startUp(t, bin, mesh)
	files := map[string]string{
		"lead":   "---\nname: lead\ncapabilities: [spawn]\nsubscribe: [general]\nallowPublish: [general]\n---\nYou lead.\n",
		"helper": "---\nname: helper\nsubscribe: [general]\nallowPublish: [general]\n---\nYou help.\n",
		"loner":  "---\nname: loner\nsubscribe: [general]\nallowPublish: [general]\n---\nYou work alone.\n",
	}
	steps := map[string][]string{
		"lead": {"tools", "call:cotal_orientation:", `call:cotal_join:{"channel":"general"}`,
			`call:cotal_spawn:{"name":"helper"}`, "await:helper here",
			`call:cotal_send:{"channel":"general","text":"thanks helper"}`, "hold"},
		"helper": {`call:cotal_join:{"channel":"general"}`, `call:cotal_send:{"channel":"general","text":"helper here"}`,
			"await:thanks helper", "call:cotal_despawn:", "hold"},
		"loner": {"tools", `call:cotal_spawn:{"name":"helper"}`, "hold"},
	}
	for name, text := range files {
		writeAgentFile(t, project, name, text)
		if err := os.WriteFile(filepath.Join(dir, name+".steps"), []byte(strings.Join(steps[name], "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"lead", "loner"} {
		if o, stderr, code := runIn(t, bin, project, nil, "start", name, "--dir", mesh, "--", fr, "-dir", dir); code != 0 {
			t.Fatalf("start %s: exit %d: %s%s", name, code, o, stderr)
		}
	}

	lead := awaitSteps(t, filepath.Join(dir, "lead.jsonl"), 6)
	for _, s := range lead[:6] {
		if s.Err != "" || s.ToolError {
			t.Errorf("lead: step %s failed: %s %s", s.Step, s.Err, s.Text)
		}
	}
	if !slices.Contains(lead[0].Tools, "cotal_spawn") || !slices.Contains(lead[0].Tools, "cotal_despawn") {
		t.Errorf("lead, granted spawn, lists %v", lead[0].Tools)
	}
	// Its own despawn may end helper, and its MCP server with it, before the answer is read:
	// what shows it is ps and the credential, below.
	helper := awaitSteps(t, filepath.Join(dir, "helper.jsonl"), 4)
	for _, s := range helper[:3] {
		if s.Err != "" || s.ToolError {
			t.Errorf("helper: step %s failed: %s %s", s.Step, s.Err, s.Text)
		}
	}
	loner := awaitSteps(t, filepath.Join(dir, "loner.jsonl"), 2)
	if slices.Contains(loner[0].Tools, "cotal_spawn") || !slices.Contains(loner[0].Tools, "cotal_despawn") {
		t.Errorf("loner, granted no capability, lists %v", loner[0].Tools)
	}
	if loner[1].Err == "" && !loner[1].ToolError {
		t.Errorf("loner's cotal_spawn succeeded: %s", loner[1].Text)
	}

	// helper despawned itself: gone from ps, its credential revoked.
	await.True(t, 60*time.Second, "helper gone from ps after its despawn", func() bool {
		_, ok := psAgent(t, bin, mesh, "helper")
		return !ok
	})
	checkRevoked(t, bin, mesh, credentialIDOf(t, bin, mesh, "helper"))

	// SIGKILL the supervisor with lead and loner running, then start it again.
	var pids []int
	for _, name := range []string{"lead", "loner"} {
		a, ok := psAgent(t, bin, mesh, name)
		if !ok {
			t.Fatalf("%s is not supervised before the kill", name)
		}
		pids = append(pids, a.PID)
	}
	if err := up.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = up.cmd.Wait()
	startUp(t, bin, mesh)
	awaitGone(t, "the team's processes after the restart", func() []int {
		var left []int
		for _, pid := range pids {
			left = append(left, groupRunning(pid)...)
		}
		return left
	})
	for _, name := range []string{"lead", "loner", "helper"} {
		checkRevoked(t, bin, mesh, credentialIDOf(t, bin, mesh, name))
	}
}

// credentialIDOf is the id of the newest credential named name in `auth list`.
func credentialIDOf(t *testing.T, bin, mesh, name string) string {
	t.Helper()
	out, stderr, code := runCotal(t, bin, "auth", "list", "--dir", mesh, "--json", "--all")
	if code != 0 {
		t.Fatalf("auth list: exit %d: %s", code, stderr)
	}
	var recs []struct{ ID, Name string }
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("auth list --json: %v\n%s", err, out)
	}
	id := ""
	for _, r := range recs {
		if r.Name == name {
			id = r.ID // each name of the team is minted once
		}
	}
	if id == "" {
		t.Fatalf("no credential named %s in:\n%s", name, out)
	}
	return id
}

// A foreground spawn killed with SIGKILL leaves its runtime's credential active only while the
// runtime runs: the mesh watches the runtime's process and revokes the credential once it is
// gone, and a mesh restarted meanwhile goes on watching it.
func TestAKilledSpawnsCredentialIsRevokedOnceItsRuntimeIsGone(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	up := startUp(t, bin, mesh)
	writeAgentFile(t, project, "solo", fmt.Sprintf(teamFile, "solo"))
	spawn := exec.Command(bin, "spawn", "solo", "--dir", mesh, "--runtime", "plain", "--", "sleep", "300")
	spawn.Dir = project
	spawn.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(project, "config"))
	if err := spawn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spawn.Process.Kill(); _ = spawn.Wait() })
	var runtime struct {
		Agents []struct {
			Name       string
			PID        int
			Credential string
			Foreground bool
		}
	}
	await.True(t, 60*time.Second, "the mesh watching solo's runtime", func() bool {
		data, err := os.ReadFile(filepath.Join(mesh, "supervisor.json"))
		return err == nil && json.Unmarshal(data, &runtime) == nil && len(runtime.Agents) == 1 &&
			runtime.Agents[0].Foreground && runtime.Agents[0].PID > 0
	})
	rt := runtime.Agents[0]
	t.Cleanup(func() { _ = syscall.Kill(rt.PID, syscall.SIGKILL) })
	if err := spawn.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = spawn.Wait()
	if !running(rt.PID) {
		t.Fatal("the runtime did not outlive its killed spawn")
	}
	// The mesh restarts while the runtime runs: the watch goes on, nothing is revoked yet.
	up.stop(t)
	startUp(t, bin, mesh)
	if active := credentialActive(t, bin, mesh, rt.Credential); !active {
		t.Fatal("the credential was revoked while its runtime still runs")
	}
	if err := syscall.Kill(rt.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	await.True(t, 30*time.Second, "solo's credential revoked once its runtime is gone", func() bool {
		return !credentialActive(t, bin, mesh, rt.Credential)
	})
}
