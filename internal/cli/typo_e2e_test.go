package cli

import "testing"

// TestSendRefusesTyposThatUsedToPass: a send whose target or text is most likely a slip is
// refused, or warned about, with what was probably meant.
func TestSendRefusesTyposThatUsedToPass(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	startUp(t, bin, dir)
	local := []string{"--dir", dir}
	mintCreds(t, bin, dir, "alice", "--subscribe", "general", "--allow-publish", "general")
	mintCreds(t, bin, dir, "rev", "--role", "reviewer")
	badSum := "UDTK2MEYYY33WROIB3F52XDRY3UOQ2FVWDPANSEP4ZM3VXTTO4XW6LZA"

	runCases(t, bin, []cliCase{
		{name: "a new channel mint would refuse is refused with its sanitized form", args: append([]string{"send", "--create", "Bad Channel!", "hi"}, local...),
			code: exitUsage, stderr: []string{`--create "Bad Channel!"`, `write the sanitized form "Bad_Channel_"`}},
		{name: "empty text is refused", args: append([]string{"send", "general", ""}, local...),
			code: exitError, stderr: []string{"nothing to send: TEXT is empty"}},
		{name: "an instance id with a bad checksum is named as such", args: append([]string{"send", badSum, "hi"}, local...),
			code: exitUsage, stderr: []string{"looks like an instance id but its checksum is wrong"}},
		{name: "a mistyped name of an offline agent suggests the minted one", args: append([]string{"send", "@alcie", "hi"}, local...),
			code: exitError, stderr: []string{`no instance has that name: "alcie"`, "did you mean @alice?"}},
		{name: "a role nobody holds is stored with a warning and the close role", args: append([]string{"send", "svc:reviewr", "please"}, local...),
			code: exitOK, stdout: []string{"stored in TASK_main"}, stderr: []string{`no credential in space main holds role "reviewr"`, "did you mean svc:reviewer?"}},
		{name: "a role a credential holds is stored without a warning", args: append([]string{"send", "svc:reviewer", "please"}, local...),
			code: exitOK, stdout: []string{"stored in"}},
	})
}
