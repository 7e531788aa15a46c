package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pause is the body of the hidden `podrun pause` command: PID 1 of a pod's
// shared process namespace (spec.shareProcessNamespace), as the kubelet's
// pause container is. It reaps the orphans re-parented to it and exits on
// SIGTERM or SIGINT.
func Pause() error {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return nil
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if pid <= 0 || errors.Is(err, unix.ECHILD) {
				break
			}
		}
	}
	return nil
}

// startPause starts the pod's process-namespace holder in a new PID
// namespace, inside the pod cgroup so that the pod's teardown ends it.
func startPause(exe string, addToCgroup func(pid int) error) (*exec.Cmd, error) {
	cmd := exec.Command(exe, "pause")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID, Pdeathsig: 0}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the pod's shared process namespace: %w", err)
	}
	if err := addToCgroup(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	// Reap it when it ends, whoever ends it.
	go func() { _ = cmd.Wait() }()
	return cmd, nil
}
