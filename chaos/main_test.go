package chaos_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestMain removes the binaries the run built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// bins are the programs the process-level tests run: the cotal binary (`cotal up`, `cotal
// auth mint`) and the agentproc helper.
type bins struct{ cotal, agent string }

var binDir string

// buildBins builds both programs once per run, without the race detector: the processes are
// the subjects of kill -9, and the in-test endpoints run under -race.
var buildBins = sync.OnceValues(func() (bins, error) {
	dir, err := os.MkdirTemp("", "cotal-chaos-bin-")
	if err != nil {
		return bins{}, err
	}
	binDir = dir
	b := bins{cotal: filepath.Join(dir, "cotal"), agent: filepath.Join(dir, "agentproc")}
	for pkg, out := range map[string]string{"github.com/cotal-go/cotal": b.cotal,
		"github.com/cotal-go/cotal/chaos/internal/agentproc": b.agent} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return bins{}, fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	return b, nil
})

func binaries(t *testing.T) bins {
	t.Helper()
	b, err := buildBins()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newRand returns the test's random source, seeded from CHAOS_SEED when set so that a failing
// schedule can be replayed; the seed is logged either way.
func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED %q: %v", s, err)
		}
		seed = v
	}
	t.Logf("random schedule seed %d (replay with CHAOS_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// between returns a random duration in [lo, hi).
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}

// tail is the last n bytes of s, for failure messages.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
