package runtime

import (
	"fmt"
	"io"

	"path/filepath"
	"strings"
	"syscall"

	"github.com/opencontainers/runc/libcontainer"
)

// processSpec is what `podrun exec` needs to run a process like the container's own.
type processSpec struct {
	Env   []string `json:"env"`
	Cwd   string   `json:"cwd"`
	UID   int      `json:"uid"`
	GID   int      `json:"gid"`
	Sgids []int    `json:"sgids,omitempty"`
}

func (p PodPaths) processFile(container string) string {
	return filepath.Join(p.ContainerDir(container), "process.json")
}

// ExecOptions are the streams of an exec'd process.
type ExecOptions struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Exec runs a command in a running container, as `kubectl exec` does, and
// returns its exit code.
func Exec(l Layout, rec *Record, container string, args []string, opts ExecOptions) (int, error) {
	st, ok := containerStatus(rec.Pod, container)
	if !ok {
		return 0, &InputError{fmt.Errorf("container %s is not valid for pod %s", container, rec.Pod.Name)}
	}
	if st.State.Running == nil {
		return 0, fmt.Errorf("unable to upgrade connection: container not found (%q): container %s in pod %s is not running", container, container, rec.Pod.Name)
	}
	id := strings.TrimPrefix(st.ContainerID, "podrun://")
	lc, err := libcontainer.Load(rec.Paths.StateRoot(), id)
	if err != nil {
		return 0, fmt.Errorf("container %s of pod %s: %w", container, rec.Pod.Name, err)
	}
	var ps processSpec
	if err := readJSON(rec.Paths.processFile(container), &ps); err != nil {
		return 0, fmt.Errorf("container %s of pod %s: %w", container, rec.Pod.Name, err)
	}
	proc, err := execProcess(lc, ps, args, opts)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s of pod %s: %w", container, rec.Pod.Name, err)
	}
	return waitExit(proc)
}

// execProcess starts a process in a running container with the container's
// own environment, working directory and user.
func execProcess(lc *libcontainer.Container, ps processSpec, args []string, opts ExecOptions) (*libcontainer.Process, error) {
	proc := &libcontainer.Process{
		Args:             args,
		Env:              ps.Env,
		Cwd:              ps.Cwd,
		UID:              ps.UID,
		GID:              ps.GID,
		AdditionalGroups: ps.Sgids,
		Stdin:            opts.Stdin,
		Stdout:           opts.Stdout,
		Stderr:           opts.Stderr,
	}
	if err := lc.Run(proc); err != nil {
		return nil, err
	}
	return proc, nil
}

func waitExit(proc *libcontainer.Process) (int, error) {
	state, err := proc.Wait()
	if state == nil {
		return 0, err
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return state.ExitCode(), nil
}
