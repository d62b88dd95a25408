package space_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// churnCycles is the credential churn RELIABILITY.md's revocation row measures (5 000 churned
// credentials; docs/hostile-agents.md "Bounded shares").
const churnCycles = 5000

// BenchmarkStartAfterCredentialChurn mints and revokes churnCycles one-second credentials in
// a data directory, waits until they have all expired, and then measures Start on it. It
// reports the mean mint+revoke cycle (cycle-µs), the account JWT after the churn
// (jwt-bytes-churned) and after a start (jwt-bytes-started), and the median Start.
// The churn takes minutes (two fsynced key-store commits per cycle), so `make bench` skips
// it unless COTAL_BENCH_CHURN is set:
//
//	COTAL_BENCH_CHURN=1 go test -run '^$' -bench StartAfterCredentialChurn -benchtime 5x ./space/
func BenchmarkStartAfterCredentialChurn(b *testing.B) {
	if os.Getenv("COTAL_BENCH_CHURN") == "" {
		b.Skip("set COTAL_BENCH_CHURN=1 to run the 5 000-cycle credential churn (minutes)")
	}
	dir := b.TempDir()
	s, err := provisioner.Open(dir, provisioner.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.EnsureSpace("main"); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	var last time.Time
	for range churnCycles {
		c, err := s.Mint(provisioner.MintRequest{Space: "main", Name: "churn", Profile: provisioner.ProfileAgent, ExpiresIn: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Revoke("main", c.ID); err != nil {
			b.Fatal(err)
		}
		last = c.ExpiresAt
	}
	cycle := time.Since(t0) / churnCycles
	churned := accountJWTSize(b, s)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	// Past every expiry and the few seconds a revocation outlives it.
	for deadline := last.Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(time.Until(deadline))
	}
	var samples []time.Duration
	for b.Loop() {
		t0 := time.Now()
		m, err := space.Start(context.Background(), space.Options{Dir: dir, Memory: true})
		if err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(t0))
		if err := m.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	s, err = provisioner.Open(dir, provisioner.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	// Reported after the loop: b.Loop's first call deletes metrics reported before it.
	reportMedian(b, samples)
	b.ReportMetric(float64(cycle.Microseconds()), "cycle-µs")
	b.ReportMetric(float64(churned), "jwt-bytes-churned")
	b.ReportMetric(float64(accountJWTSize(b, s)), "jwt-bytes-started")
}

func accountJWTSize(b *testing.B, s *provisioner.Store) int {
	b.Helper()
	a, err := s.Space("main")
	if err != nil {
		b.Fatal(err)
	}
	return len(a.JWT)
}
