package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// demo runs serve and two agents in one go: the mesh in this process, each agent in a child
// process of this same binary, so the two agents share nothing but the TCP listener.
func demo(ctx context.Context) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "cotal-tcp-creds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	m, link, files, err := startMesh(ctx, "127.0.0.1:0", dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close(context.WithoutCancel(ctx))) }()
	fmt.Printf("mesh listening: %s\n", link)

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to run it as the agents: %w", err)
	}
	outs := make([]bytes.Buffer, len(agents))
	cmds := make([]*exec.Cmd, len(agents))
	for i, f := range files {
		cmds[i] = exec.CommandContext(ctx, self, "agent", "--link", link, "--creds", f, "--peer", agents[1-i])
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		if err := cmds[i].Start(); err != nil {
			return fmt.Errorf("start the %s process: %w", agents[i], err)
		}
	}
	var errs []error
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("the %s process: %w", agents[i], err))
		}
		for line := range strings.Lines(outs[i].String()) {
			fmt.Printf("[%s process, pid %d] %s", agents[i], cmd.Process.Pid, line)
		}
	}
	return errors.Join(errs...)
}
