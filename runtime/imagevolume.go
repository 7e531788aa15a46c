package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/moby/sys/mountinfo"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/store"
)

// Image volumes (spec.volumes[*].image) as the kubelet and the runtime make
// them: the kubelet pulls every image volume of the pod before it starts
// containers in a sync (kuberuntime_manager.go getImageVolumes), a container
// that mounts one whose pull failed does not start and waits in the pull's
// reason (toKubeContainerImageVolumes), and the runtime mounts the image
// read-only, once per pod and image, where the container's mounts bind it
// (containerd's mutateImageMount).

// imageVolumeMountFailed prefixes the runtime's errors in mounting an image
// volume (the CRI's ErrImageVolumeMountFailed).
const imageVolumeMountFailed = "ImageVolumeMountFailed"

// volumeRound is one resolution of the pod's image volumes.
type volumeRound struct {
	done     chan struct{}
	consumed bool // a container start has used it
	res      map[string]volumePull
}

// volumePull is one image volume's result.
type volumePull struct {
	ref    string
	policy corev1.PullPolicy
	img    *image.Image
	err    error
	// skipped: the image's last pull failed and its backoff holds
	// (volumeBackoff); a container that mounts it pulls it itself.
	skipped bool
}

// volumeFailure is the backoff of an image volume's image whose pull failed.
type volumeFailure struct {
	at    time.Time
	delay time.Duration
}

// Default image pull backoff, as the kubelet's (and the supervisor's).
const (
	defaultPullBackoff    = 10 * time.Second
	defaultPullBackoffMax = 300 * time.Second
)

// volumeBackoff says whether the image ref's last failed pull still holds
// its pulls for the rounds of containers that do not mount it, as the image
// manager's per pod and image backoff answers "Back-off pulling image"
// without pulling. Containers that mount it are held by the supervisor's
// own backoff and pull it when that ends. Callers hold volMu.
func (r *podRunner) volumeBackoff(ref string) bool {
	f, ok := r.volFailed[ref]
	return ok && time.Since(f.at) < f.delay
}

// noteVolumePull records how a pull of an image volume's image went: a
// failed pull doubles its backoff (from the settings' initial one, up to
// their maximum), a success ends it; Never is not backed off.
func (r *podRunner) noteVolumePull(ref string, err error) {
	r.volMu.Lock()
	defer r.volMu.Unlock()
	var se *startError
	if err == nil || !errors.As(err, &se) || se.Reason != ReasonErrImagePull {
		delete(r.volFailed, ref)
		return
	}
	initial, max := r.settings.BackoffInitial.Duration, r.settings.BackoffMax.Duration
	if initial <= 0 {
		initial = defaultPullBackoff
	}
	if max <= 0 {
		max = defaultPullBackoffMax
	}
	f, ok := r.volFailed[ref]
	switch {
	case !ok:
		f.delay = initial
	default:
		f.delay = min(2*f.delay, max)
	}
	f.at = time.Now()
	if r.volFailed == nil {
		r.volFailed = map[string]volumeFailure{}
	}
	r.volFailed[ref] = f
}

// hasImageVolumes says whether the pod has an image volume.
func (r *podRunner) hasImageVolumes() bool {
	for i := range r.plan.Pod.Spec.Volumes {
		if r.plan.Pod.Spec.Volumes[i].Image != nil {
			return true
		}
	}
	return false
}

// mountsImageVolume says whether c mounts one of the pod's image volumes.
func (r *podRunner) mountsImageVolume(c *corev1.Container) bool {
	for _, m := range c.VolumeMounts {
		for i := range r.plan.Pod.Spec.Volumes {
			if v := &r.plan.Pod.Spec.Volumes[i]; v.Name == m.Name && v.Image != nil {
				return true
			}
		}
	}
	return false
}

// volumeRound resolves every image volume of the pod, as one kubelet sync
// does before the containers it starts: a start joins a round in flight, or
// takes the one Prepull began if no start has used it yet; otherwise a new
// round begins, so that pullPolicy Always pulls again for each start, as
// the kubelet does for each sync that starts a container. Prepull begins a
// round only when none has begun.
func (r *podRunner) volumeRound(ctx context.Context, forStart bool) *volumeRound {
	r.volMu.Lock()
	rd := r.volRound
	if rd != nil && (!forStart || !isClosed(rd.done) || !rd.consumed) {
		if forStart {
			rd.consumed = true
		}
		r.volMu.Unlock()
		<-rd.done
		return rd
	}
	rd = &volumeRound{done: make(chan struct{}), consumed: forStart}
	r.volRound = rd
	r.volMu.Unlock()
	rd.res = map[string]volumePull{}
	for i := range r.plan.Pod.Spec.Volumes {
		v := &r.plan.Pod.Spec.Volumes[i]
		if v.Image == nil {
			continue
		}
		res := volumePull{ref: v.Image.Reference, policy: v.Image.PullPolicy}
		r.volMu.Lock()
		res.skipped = r.volumeBackoff(res.ref)
		r.volMu.Unlock()
		if res.skipped {
			// The image manager records an image volume's events against
			// the pod itself (no field path).
			r.events.Add("Normal", "BackOff", "", "Back-off pulling image %q", res.ref)
		} else {
			res.img, res.err = r.ensure(ctx, res.ref, res.policy, "")
			r.noteVolumePull(res.ref, res.err)
		}
		rd.res[v.Name] = res
	}
	close(rd.done)
	return rd
}

// imageVolumes resolves the pod's image volumes for c's start and mounts the
// images of those c mounts; it returns, by volume name, where each is
// mounted. A volume of c whose pull failed fails the start with that pull's
// reason, the last one as toKubeContainerImageVolumes keeps it; volumes c
// does not mount do not hold it.
func (r *podRunner) imageVolumes(ctx context.Context, c *corev1.Container) (map[string]string, error) {
	if !r.hasImageVolumes() {
		return nil, nil
	}
	rd := r.volumeRound(ctx, true)
	var failed error
	out := map[string]string{}
	resolved := map[string]volumePull{}
	for _, m := range c.VolumeMounts {
		res, ok := resolved[m.Name]
		if !ok {
			if res, ok = rd.res[m.Name]; !ok {
				continue
			}
			if res.skipped {
				// Its backoff held the round; c's own (the supervisor's)
				// has ended, so c pulls it now.
				res.img, res.err = r.ensure(ctx, res.ref, res.policy, "")
				r.noteVolumePull(res.ref, res.err)
				res.skipped = false
			}
			resolved[m.Name] = res
		}
		if res.err != nil {
			var se *startError
			if errors.As(res.err, &se) {
				e := *se
				e.Image = res.ref
				failed = &e
			} else {
				failed = &startError{Reason: ReasonErrImagePull, Waiting: true, Message: res.err.Error(), Image: res.ref}
			}
			continue
		}
		if _, done := out[m.Name]; done {
			continue
		}
		dir, err := r.mountImageVolume(res.img)
		if err != nil {
			return nil, &startError{Reason: ReasonCreateContainerError, Waiting: true,
				Message: fmt.Sprintf("%s: mounting image %q of volume %q: %v", imageVolumeMountFailed, res.ref, m.Name, err)}
		}
		out[m.Name] = dir
	}
	if failed != nil {
		return nil, failed
	}
	return out, nil
}

// mountImageVolume mounts img read-only for the pod's image volumes, once:
// every container and volume of the pod that uses the image shares the
// mount, which stays until the sandbox is torn down (containerd's
// mutateImageMount and cleanupImageMounts). A pod with hostUsers: false sees
// the image's files through its user namespace's mapping.
func (r *podRunner) mountImageVolume(img *image.Image) (string, error) {
	target := r.paths.ImageVolumeDir(img.ID)
	r.volMu.Lock()
	defer r.volMu.Unlock()
	if mounted, err := mountinfo.Mounted(target); err == nil && mounted {
		return target, nil // by an earlier start, or an earlier supervisor
	}
	layers, err := r.store.LayerDirs(img)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return "", err
	}
	var userns *os.File
	if r.sb.usernsBase != 0 {
		userns = r.sb.usernsFile
	}
	if err := image.MountReadOnly(layers, userns, target); err != nil {
		_ = os.Remove(target)
		return "", err
	}
	return target, nil
}

// unmountImageVolumes releases the pod's image volume mounts (teardown, also
// after a crash: it needs nothing but the pod's paths).
func unmountImageVolumes(paths store.PodPaths) error {
	dirs, _ := filepath.Glob(filepath.Join(paths.ImageVolumesDir(), "*"))
	var errs []error
	for _, d := range dirs {
		if err := image.UnmountRootfs(d); err != nil {
			errs = append(errs, fmt.Errorf("unmounting image volume %s: %w", d, err))
			continue
		}
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.Remove(paths.ImageVolumesDir()); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
