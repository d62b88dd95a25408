package cli

import (
	"strings"
	"testing"
)

// TestMessagesSpeakTheCommandLinesWords: what the commands print names an open mesh as one,
// carries no Go package prefix, ends a suggestion with its question mark, and an rm of a
// channel that does not exist says so with the close names instead of offering --create.
func TestMessagesSpeakTheCommandLinesWords(t *testing.T) {
	bin := cotalBin(t)

	t.Run("on an open mesh", func(t *testing.T) {
		dir := t.TempDir()
		startUp(t, bin, dir, "--open")
		tail := startStream(t, bin, "tail", "--dir", dir)
		tail.waitStderr(t, "following space main at 127.0.0.1:")
		if line := tail.stderr.String(); !strings.Contains(line, " on an open mesh; Ctrl-C to stop") || strings.Contains(line, "no credential") {
			t.Errorf("tail on an open mesh printed %q", line)
		}
		tail.interrupt(t)
		_, stderr, code := runCotal(t, bin, "auth", "list", "--dir", dir)
		if code != exitError || !strings.HasPrefix(stderr, "cotal: the mesh runs in open mode and has no credentials: it was started with `cotal up --open`") {
			t.Errorf("auth list on an open mesh: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("with credentials", func(t *testing.T) {
		dir := t.TempDir()
		startUp(t, bin, dir)
		local := []string{"--dir", dir}
		cliCase{args: append([]string{"send", "general", "hello", "--create"}, local...), stdout: []string{"stored in CHAT_main"}}.run(t, bin)
		_, stderr, code := runCotal(t, bin, append([]string{"send", "generl", "x"}, local...)...)
		if code != exitError || !strings.HasSuffix(stderr, "; did you mean general?\n") || strings.Contains(stderr, "?;") {
			t.Errorf("send to a typo: exit %d, stderr %q; want it to end with the question", code, stderr)
		}
		_, stderr, code = runCotal(t, bin, append([]string{"channels", "rm", "generl", "--force"}, local...)...)
		want := `cotal: unknown channel "generl": no such channel in space main (no message, no config), so there is nothing to remove; ` +
			"`cotal channels list` shows the channels; did you mean general?\n"
		if code != exitError || stderr != want {
			t.Errorf("channels rm of a typo: exit %d, stderr %q; want %q", code, stderr, want)
		}
	})
}
