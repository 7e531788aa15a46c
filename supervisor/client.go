package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/internal/crashpoint"
	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
)

// DeleteOptions follow kubectl delete: GracePeriod nil means the pod's
// terminationGracePeriodSeconds; Force with no grace period means 0 (kill now).
type DeleteOptions struct {
	GracePeriod *int64
	Force       bool
	// NoWait (kubectl delete --wait=false) returns once the deletion is
	// requested of a pod another delete is already finishing.
	NoWait bool
	// Requested, when set, is called once the supervisor has been asked to
	// stop the pod (the pod reads as Terminating from then on), or when there
	// is nothing to ask.
	Requested func()
}

// Delete stops a pod gracefully and releases everything it holds on the host,
// then removes its record. It works whatever state the pod is in, also after
// its supervisor crashed, with a record that cannot be read, again after a
// delete that was interrupted, and on a full disk: it writes nothing under
// --root before it acts. It holds the pod name's reservation, so an apply of
// the same name waits until the pod is gone, and a pod an apply is starting
// is deleted once it has started.
func Delete(l store.Layout, rec *store.Record, opts DeleteOptions) error {
	if rec.Request.Delete != nil {
		// Another delete is finishing this pod (`delete --wait=false`): as
		// the API server takes a second delete of a terminating pod, ask
		// again (a shorter grace period shortens the wait) and wait with it.
		if done, err := deleteTerminating(l, rec, opts); done {
			return err
		}
	}
	lock, err := l.LockName(rec.Pod.Namespace, "pods", rec.Pod.Name)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	crashpoint.Hit("delete:reserved")
	cur, err := store.FindPod(l, rec.Pod.Namespace, rec.Pod.Name)
	if errors.Is(err, store.ErrNotFound) && rec.Request.Delete != nil {
		return nil // the delete that was finishing it is done
	}
	if err != nil {
		return err
	}
	return deleteLocked(l, cur, opts)
}

// deleteTerminating is Delete of a pod whose deletion another delete is
// finishing: it asks its supervisor again and, unless NoWait, waits until it
// has exited; done says the delete has nothing more to do.
func deleteTerminating(l store.Layout, rec *store.Record, opts DeleteOptions) (done bool, err error) {
	pid := store.SupervisorPid(rec.Paths)
	if pid <= 0 {
		return false, nil
	}
	grace := deleteGracePeriod(rec, opts)
	if err := request(rec.Paths, pid, func(r *store.Request) { r.Delete = nextDelete(r.Delete, grace) }); err != nil {
		return false, nil
	}
	if opts.Requested != nil {
		opts.Requested()
	}
	if opts.NoWait {
		return true, nil
	}
	// Then, under the reservation (once the delete finishing it has let go
	// of it), the record is gone, or what is left is removed here.
	waitExit(rec.Paths, pid, time.Duration(grace)*time.Second+30*time.Second)
	return false, nil
}

// deleteGracePeriod is the grace period of a delete: the pod's, or the one
// the command gives.
func deleteGracePeriod(rec *store.Record, opts DeleteOptions) int64 {
	grace := int64(30)
	if g := rec.Pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if opts.GracePeriod != nil {
		grace = *opts.GracePeriod
	} else if opts.Force {
		grace = 0
	}
	return grace
}

// nextDelete is the delete request after another: the first one's time, and
// a grace period a second delete may shorten, never extend (as the API
// server's BeforeDelete for a pod already being deleted).
func nextDelete(prev *store.DeleteRequest, grace int64) *store.DeleteRequest {
	if prev != nil && prev.GracePeriodSeconds <= grace {
		return prev
	}
	next := &store.DeleteRequest{Timestamp: metav1.Now(), GracePeriodSeconds: grace}
	if prev != nil {
		next.Timestamp = prev.Timestamp
	}
	return next
}

func deleteLocked(l store.Layout, rec *store.Record, opts DeleteOptions) error {
	grace := deleteGracePeriod(rec, opts)
	pid := store.SupervisorPid(rec.Paths)
	if pid > 0 {
		err := request(rec.Paths, pid, func(r *store.Request) { r.Delete = nextDelete(r.Delete, grace) })
		if err != nil {
			// The supervisor cannot be asked: stop it the hard way, teardown follows.
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		crashpoint.Hit("delete:requested")
	}
	if opts.Requested != nil {
		opts.Requested()
	}
	if pid > 0 {
		// The supervisor stops the containers within the grace period and tears
		// the sandbox down; give it that long and a margin for the teardown.
		if !waitExit(rec.Paths, pid, time.Duration(grace)*time.Second+30*time.Second) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitExit(rec.Paths, pid, 5*time.Second)
		}
	}
	return finishDelete(l, rec)
}

// finishDelete ends a delete once nothing of the pod runs: its record goes,
// unless the pod has finalizers. Then, as the API server keeps an object
// until its finalizers are removed, what the pod held on the host is
// released and its record stays, its deletion recorded in it (the request
// lives under the run root), until an update removes the last finalizer
// (update).
func finishDelete(l store.Layout, rec *store.Record) error {
	cur, err := store.LoadRecord(l, rec.Paths.Dir)
	if err != nil || cur.Broken != nil || len(cur.Pod.Finalizers) == 0 {
		return removePod(l, rec)
	}
	if err := runtime.TeardownSandbox(cur.PodLayout(l), cur.Paths, string(cur.Pod.UID)); err != nil {
		return fmt.Errorf("releasing pod %s: %w", cur.Key(), err)
	}
	pod := cur.Pod
	if pod.DeletionTimestamp == nil {
		// Nothing ran it (it had finished): deleted at once, as the API
		// server deletes a terminal pod.
		now, zero := metav1.Now(), int64(0)
		pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, &zero
		if pod.Generation > 0 {
			pod.Generation++
		}
	}
	applied, _ := os.ReadFile(cur.Paths.AppliedFile())
	return store.UpdateSpec(cur.Paths, pod, string(applied))
}

// request is the CLI's end of the request channel: it changes the pod's
// request file under the run root and rings the supervisor (SIGUSR1), which
// reads it (supervise.go: readRequest). The file survives a supervisor crash.
func request(paths store.PodPaths, pid int, change func(*store.Request)) error {
	lock := flock.New(paths.RequestFile() + ".lock")
	if err := lock.Lock(); err != nil {
		return err
	}
	defer lock.Unlock()
	var req store.Request
	if err := store.ReadJSON(paths.RequestFile(), &req); err != nil && !errors.Is(err, os.ErrNotExist) {
		req = store.Request{} // a torn request is replaced
	}
	change(&req)
	if err := store.WriteJSON(paths.RequestFile(), req); err != nil {
		return err
	}
	return syscall.Kill(pid, syscall.SIGUSR1)
}

// waitExit waits until the supervisor pid has exited, through a pidfd (no
// polling), at most d; it reports whether it has.
func waitExit(paths store.PodPaths, pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return store.SupervisorPid(paths) != pid
	}
	defer unix.Close(fd)
	if store.SupervisorPid(paths) != pid {
		return true // the pid was reused before we held it
	}
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(min(left, time.Hour).Milliseconds())+1)
		if err == nil && n > 0 {
			return true
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return store.SupervisorPid(paths) != pid
		}
	}
}

// removePod tears down whatever is left of the pod and removes its record. It
// takes the pod's settings from its record (its cgroup parent, its bridge).
func removePod(l store.Layout, rec *store.Record) error {
	if err := runtime.TeardownSandbox(rec.PodLayout(l), rec.Paths, string(rec.Pod.UID)); err != nil {
		return fmt.Errorf("releasing pod %s: %w", rec.Key(), err)
	}
	runtime.ReleaseUserNS(rec.PodLayout(l), rec.Paths)
	crashpoint.Hit("delete:released")
	// Never remove through a mount that is still there (a volume, a rootfs).
	for _, dir := range []string{rec.Paths.RunDir, rec.Paths.Dir} {
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
	}
	// Gone for every reader from here (and swept by the next apply or
	// delete if this one is cut short): the run directory, with the delete
	// request, goes first, and the pod must not read as lost meanwhile.
	// Marked only once nothing is mounted: the sweep removes without looking.
	if err := store.MarkRemoving(rec.Paths.Dir); err != nil {
		return fmt.Errorf("removing the record of pod %s: %w", rec.Key(), err)
	}
	if err := os.RemoveAll(rec.Paths.RunDir); err != nil {
		return fmt.Errorf("removing the record of pod %s: %w", rec.Key(), err)
	}
	crashpoint.Hit("delete:half-removed")
	if err := store.RemoveRecordDir(rec.Paths.Dir); err != nil {
		return fmt.Errorf("removing the record of pod %s: %w", rec.Key(), err)
	}
	// Claims deleted while this pod used them go now if no other pod uses
	// them (the pvc-protection controller's finalizer).
	if len(store.PodClaims(rec.Pod)) > 0 {
		if err := store.ReleaseClaims(l, rec.Pod.Namespace); err != nil {
			return fmt.Errorf("releasing the claims of pod %s: %w", rec.Key(), err)
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
	if err := request(rec.Paths, pid, func(r *store.Request) { r.Restart++ }); err != nil {
		return fmt.Errorf("restarting pod %q: %w", rec.Pod.Name, err)
	}
	return nil
}
