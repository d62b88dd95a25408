package delivery

import "testing"

// StopLoop stops the named loop and holds it down until the returned release is called (or
// the test ends), so a test can observe it down before the supervisor restarts it.
func (s *Service) StopLoop(t testing.TB, name string) (release func()) {
	t.Helper()
	release, err := s.stopLoop(name, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return release
}
