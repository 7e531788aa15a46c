package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
)

// DeleteOptions follow kubectl delete: GracePeriod nil means the pod's
// terminationGracePeriodSeconds; Force with no grace period means 0 (kill now).
type DeleteOptions struct {
	GracePeriod *int64
	Force       bool
}

// Delete stops a pod gracefully and releases everything it holds on the host,
// then removes its record. It works whatever state the pod is in, also after
// its supervisor crashed, and again after a delete that was interrupted.
func Delete(l store.Layout, rec *store.Record, opts DeleteOptions) error {
	grace := int64(30)
	if g := rec.Pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if opts.GracePeriod != nil {
		grace = *opts.GracePeriod
	} else if opts.Force {
		grace = 0
	}
	if err := store.WriteJSON(rec.Paths.DeleteFile(), store.DeleteRequest{Timestamp: metav1.Now(), GracePeriodSeconds: grace}); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("recording the deletion of pod %s: %w", rec.Key(), err)
	}
	if pid := store.SupervisorPid(rec.Paths); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		// The supervisor stops the containers within the grace period and tears
		// the sandbox down; give it that long and a margin for the teardown.
		deadline := time.Now().Add(time.Duration(grace)*time.Second + 30*time.Second)
		for store.SupervisorPid(rec.Paths) > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if pid := store.SupervisorPid(rec.Paths); pid > 0 {
			// It still holds the pod's lock, so the pid is the supervisor's.
			_ = syscall.Kill(pid, syscall.SIGKILL)
			for i := 0; i < 100 && store.SupervisorPid(rec.Paths) > 0; i++ {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	return removePod(l, rec)
}

// removePod tears down whatever is left of the pod and removes its record.
func removePod(l store.Layout, rec *store.Record) error {
	if err := runtime.TeardownSandbox(l, rec.Paths, string(rec.Pod.UID)); err != nil {
		return fmt.Errorf("releasing pod %s: %w", rec.Key(), err)
	}
	for _, dir := range []string{rec.Paths.RunDir, rec.Paths.Dir} {
		// Never remove through a mount that is still there (a volume, a rootfs).
		mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		if err != nil {
			return err
		}
		if len(mounts) > 0 {
			var points []string
			for _, m := range mounts {
				points = append(points, m.Mountpoint)
			}
			return fmt.Errorf("releasing pod %s: still mounted: %s", rec.Key(), strings.Join(points, ", "))
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing the record of pod %s: %w", rec.Key(), err)
		}
	}
	return nil
}

// Restart asks a pod's supervisor to restart the pod: its containers stop
// gracefully, then every init container runs again from the first.
func Restart(rec *store.Record) error {
	if store.IsTerminal(rec.Pod) {
		return errdefs.Invalid(fmt.Errorf("pod %q has %s and cannot run again: delete it and apply it again", rec.Pod.Name, strings.ToLower(string(rec.Pod.Status.Phase))))
	}
	if rec.Pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		// The kubelet never runs a Never pod's containers again once they have run.
		return errdefs.Invalid(fmt.Errorf("pod %q has restartPolicy Never and cannot run again: delete it and apply it again", rec.Pod.Name))
	}
	pid := store.SupervisorPid(rec.Paths)
	if pid == 0 {
		return fmt.Errorf("pod %q has no running supervisor", rec.Pod.Name)
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("restarting pod %q: %w", rec.Pod.Name, err)
	}
	return nil
}
