// Package crashpoint lets the end-to-end tests crash podrun at named points
// of its code, deterministically: with PODRUN_TEST_CRASHPOINT=NAME in its
// environment, a podrun process (and the supervisors it starts, which inherit
// the environment) kills itself with SIGKILL when it reaches the point NAME,
// as a crash, an OOM kill or a power cut at that instant would stop it. The
// variable is for tests only; nothing else sets it.
package crashpoint

import (
	"os"
	"syscall"
)

// Env is the environment variable naming the point to crash at.
const Env = "PODRUN_TEST_CRASHPOINT"

var target = os.Getenv(Env)

// Hit kills the process with SIGKILL when name is the point the environment
// names; otherwise it does nothing.
func Hit(name string) {
	if target != "" && target == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not delivered synchronously everywhere
	}
}
