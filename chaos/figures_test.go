package chaos_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cotal-go/cotal/chaos"
)

// figuresMu serializes appends to the figures file across parallel tests.
var figuresMu sync.Mutex

// record logs one row of the figures table and, when CHAOS_FIGURES names a file (`make
// chaos` sets it and prints the file), appends the row there as Markdown.
func record(t *testing.T, scenario, figures string) {
	t.Helper()
	row := fmt.Sprintf("| %s | %s | %s |", tier.name, scenario, figures)
	t.Log("figures " + row)
	path := os.Getenv("CHAOS_FIGURES")
	if path == "" {
		return
	}
	figuresMu.Lock()
	defer figuresMu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Errorf("figures file: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(row + "\n"); err != nil {
		t.Errorf("figures file: %v", err)
	}
}

// deliveryFigures renders a checker verdict for the table.
func deliveryFigures(f chaos.Figures) string {
	return fmt.Sprintf("acked %d (unacked %d); owed %d, surfaced %d, **lost %d, surfaced twice %d, unexpected %d**; "+
		"allowed: unacked surfaced %d, re-surfaced by a later incarnation %d, anycast to 2 holders %d",
		f.Acked, f.Unacked, f.Expected, f.Surfaced, f.Lost, f.Duplicates, f.Unexpected,
		f.UnackedSurfaced, f.Resurfaced, f.ExtraHolders)
}

// durations renders a list of durations as max / median.
func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Sorted(slices.Values(ds))
	return fmt.Sprintf("max %v, median %v", s[len(s)-1].Round(time.Millisecond), s[len(s)/2].Round(time.Millisecond))
}

// joinNotes joins non-empty notes.
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}
