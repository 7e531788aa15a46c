package runtime

import (
	"fmt"
	"io"
	"os"
	"os/signal"

	"strings"
	"syscall"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/utils"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/podrun/podrun/store"
)

// processSpec is what `podrun exec` needs to run a process like the container's own.
type processSpec struct {
	Env   []string `json:"env"`
	Cwd   string   `json:"cwd"`
	UID   int      `json:"uid"`
	GID   int      `json:"gid"`
	Sgids []int    `json:"sgids,omitempty"`
}

// ExecOptions are the streams of an exec'd process. With TTY the process gets
// a terminal whose other end is copied to and from Stdin and Stdout (a
// terminal on Stdin is put in raw mode and its size follows along).
type ExecOptions struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
}

// Exec runs a command in a running container, as `kubectl exec` does, and
// returns its exit code.
func Exec(l store.Layout, rec *store.Record, container string, args []string, opts ExecOptions) (int, error) {
	st, ok := store.ContainerStatus(rec.Pod, container)
	if !ok {
		// The API server's BadRequest, which kubectl exits 1 with.
		return 0, fmt.Errorf("container %s is not valid for pod %s", container, rec.Pod.Name)
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
	if err := store.ReadJSON(rec.Paths.ProcessFile(container), &ps); err != nil {
		return 0, fmt.Errorf("container %s of pod %s: %w", container, rec.Pod.Name, err)
	}
	if opts.TTY {
		return execTTY(lc, ps, args, opts)
	}
	proc, err := execProcess(lc, ps, args, opts)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s of pod %s: %w", container, rec.Pod.Name, err)
	}
	return waitExit(proc)
}

// execTTY runs a process on a new terminal, as `runc exec -t` does: the
// container's init sends the terminal's master end over a socket pair.
func execTTY(lc *libcontainer.Container, ps processSpec, args []string, opts ExecOptions) (int, error) {
	parent, child, err := utils.NewSockPair("console")
	if err != nil {
		return 0, err
	}
	defer parent.Close()
	host, _ := opts.Stdin.(*os.File)
	isTerm := host != nil && term.IsTerminal(int(host.Fd()))
	proc := &libcontainer.Process{
		Args: args, Env: ps.Env, Cwd: ps.Cwd, UID: ps.UID, GID: ps.GID, AdditionalGroups: ps.Sgids,
		ConsoleSocket: child,
	}
	if isTerm {
		if w, h, err := term.GetSize(int(host.Fd())); err == nil {
			proc.ConsoleWidth, proc.ConsoleHeight = uint16(w), uint16(h)
		}
	}
	if err := lc.Run(proc); err != nil {
		child.Close()
		return 0, fmt.Errorf("exec with a terminal: %w", err)
	}
	child.Close()
	master, err := utils.RecvFile(parent)
	if err != nil {
		_ = proc.Signal(syscall.SIGKILL)
		_, _ = proc.Wait()
		return 0, fmt.Errorf("receiving the terminal: %w", err)
	}
	defer master.Close()
	// The caller's terminal is made raw below, so it no longer turns \n into
	// \r\n: the container's terminal must, as a kubelet's does for kubectl exec
	// -it (its default termios). Only output that goes to no terminal drops the
	// \r, as runc does for a detached console.
	if !isTerm {
		if t, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS); err == nil {
			t.Oflag &^= unix.ONLCR
			_ = unix.IoctlSetTermios(int(master.Fd()), unix.TCSETS, t)
		}
	}
	if isTerm {
		if old, err := term.MakeRaw(int(host.Fd())); err == nil {
			defer func() { _ = term.Restore(int(host.Fd()), old) }()
		}
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				if ws, err := unix.IoctlGetWinsize(int(host.Fd()), unix.TIOCGWINSZ); err == nil {
					_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, ws)
				}
			}
		}()
	}
	if opts.Stdin != nil {
		go func() { _, _ = io.Copy(master, opts.Stdin) }()
	}
	copied := make(chan struct{})
	go func() {
		// Reading the master ends with EIO once the process and its children are gone.
		_, _ = io.Copy(opts.Stdout, master)
		close(copied)
	}()
	code, err := waitExit(proc)
	<-copied
	return code, err
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
