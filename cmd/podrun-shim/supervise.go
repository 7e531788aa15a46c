package main

import (
	"fmt"
	"log/slog"
	"os"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/cgroups"
	"github.com/podrun/podrun/internal/ownerproc"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/services"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

// supervise is the detached pod supervisor that `podrun apply` starts. It is
// given the pod's UID alone: everything else is in the pod's record.
func supervise(l store.Layout, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: %s supervise UID|--standby", shimName)
	}
	if args[0] == "--standby" {
		// Started ahead by apply (supervisor.SpawnStandby): the UID comes
		// on fd 4 once the pod is recorded, or never; the wait is used for
		// the start's first-use work (runtime.Warm).
		go runtime.Warm()
		uid, ok, err := ownerproc.StandbyWork()
		if !ok {
			return err
		}
		args = []string{uid}
	}
	rec, err := store.FindPodByUID(l, args[0])
	if err != nil {
		return err
	}
	// Under systemd the supervisor leaves the caller's unit (a login
	// scope or a CI step) for a scope of its own, as conmon does.
	if rec.PodLayout(l).CgroupDriver == cgroups.DriverSystemd {
		if _, err := cgroups.LeaveCallerUnit(string(rec.Pod.UID)); err != nil {
			slog.Warn("the supervisor stays in the caller's cgroup", "err", err)
		}
	}
	runtime.ServiceEnv = serviceEnv
	// apply passes the write end of its readiness pipe as fd 3.
	ready := os.NewFile(3, "ready")
	return supervisor.Supervise(l, rec, supervisor.SuperviseOptions{Ready: ready})
}

// serviceEnv is the kubelet's service environment of a pod's containers: the
// Services of its namespace as they are when the container starts.
func serviceEnv(l store.Layout, pod *corev1.Pod) map[string]string {
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return services.EnvVars(pod.Namespace, links, l.Services(pod.Namespace))
}
