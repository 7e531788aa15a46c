package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/sys/capability"
	"github.com/moby/sys/user"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/cgroups"
	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/network"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/volumes"
)

// podRunner starts a pod's containers in its sandbox with libcontainer.
type podRunner struct {
	l      store.Layout
	paths  store.PodPaths
	plan   *podspec.Plan
	sb     *sandbox
	store  *image.Store
	events *store.EventLog
	// pulls makes concurrent starts of containers with one image pull it once.
	pullMu sync.Mutex
	pulls  map[string]*pull
	// A run's exit is reported before its libcontainer state, cgroup and rootfs
	// mount are released (podContainer.Wait): releasing counts the releases in
	// flight, released holds each container's last one, which its next run waits for.
	releasing sync.WaitGroup
	releaseMu sync.Mutex
	released  map[string]chan struct{}
	// settings carry the log rotation policy and the seccomp default.
	settings store.Settings
	// progress is where the pod's image pulls stand, for apply --wait.
	progress pullProgress
	// dnsOnce is the first container's wait for the cluster DNS.
	dnsOnce sync.Once
	// ahead holds the containers created ahead of their turn, by name
	// (createAhead); closed stops it once the pod stops.
	aheadMu sync.Mutex
	ahead   map[string]*ahead
	taken   map[string]bool // containers whose turn has come once
	closed  bool
	// ephemeral holds the pod's ephemeral containers by name, each with the
	// PID namespace it joins ("" for its own): StartEphemeral.
	ephMu     sync.Mutex
	ephemeral map[string]string
	// volRound is the latest resolution of the pod's image volumes
	// (volumeRound), volFailed the backoffs of their failed pulls by image
	// reference; volMu guards them and the image volume mounts.
	volMu     sync.Mutex
	volRound  *volumeRound
	volFailed map[string]volumeFailure
}

// waitReleased waits until the previous run of the container is released.
func (r *podRunner) waitReleased(name string) {
	r.releaseMu.Lock()
	ch := r.released[name]
	r.releaseMu.Unlock()
	if ch != nil {
		<-ch
	}
}

type pull struct {
	done chan struct{}
	img  *image.Image
	err  error
}

func (r *podRunner) object(c *corev1.Container) string {
	if _, ok := r.ephemeralPIDNS(c.Name); ok {
		return fmt.Sprintf("spec.ephemeralContainers{%s}", c.Name)
	}
	for i := range r.plan.Pod.Spec.InitContainers {
		if r.plan.Pod.Spec.InitContainers[i].Name == c.Name {
			return fmt.Sprintf("spec.initContainers{%s}", c.Name)
		}
	}
	return fmt.Sprintf("spec.containers{%s}", c.Name)
}

// ensureImage makes the container's image present as its imagePullPolicy says.
func (r *podRunner) ensureImage(ctx context.Context, c *corev1.Container) (*image.Image, error) {
	return r.ensure(ctx, c.Image, c.ImagePullPolicy, r.object(c))
}

// ensure makes the image ref present as policy says (the image manager's
// EnsureImageExists), with its events against object: a container's field
// path, or "" (the pod) for an image volume's.
func (r *podRunner) ensure(ctx context.Context, ref string, policy corev1.PullPolicy, object string) (*image.Image, error) {
	if policy == "" {
		policy = podspec.ImagePullPolicyFor(ref)
	}
	if policy != corev1.PullAlways {
		img, err := r.store.Lookup(ref)
		if err == nil {
			r.events.Add("Normal", "Pulled", object, "Container image %q already present on machine", ref)
			return img, nil
		}
		if !errors.Is(err, image.ErrNotFound) {
			return nil, err
		}
		if policy == corev1.PullNever {
			// The image manager's EnsureImageExists: a Warning event of the
			// reason, then the waiting state with the same message.
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", ref)
			r.events.Add("Warning", ReasonErrImageNeverPull, object, "%s", msg)
			return nil, &startError{Reason: ReasonErrImageNeverPull, Waiting: true, Message: msg}
		}
	}
	// Containers starting together share one pull; a pull that has finished is never
	// reused, so imagePullPolicy Always pulls again before every start (as the kubelet).
	r.pullMu.Lock()
	p, ok := r.pulls[ref]
	if !ok || isClosed(p.done) {
		p = &pull{done: make(chan struct{})}
		r.pulls[ref] = p
		r.pullMu.Unlock()
		keyring := r.pullSecrets()
		r.events.Add("Normal", "Pulling", object, "Pulling image %q", ref)
		start := time.Now()
		r.progress.start(ref)
		p.img, p.err = r.store.Pull(ctx, ref, image.PullOptions{Keyring: keyring,
			OnLayer: func(lp image.LayerProgress) { r.progress.layer(ref, lp) }})
		var size int64
		if p.err == nil {
			size = p.img.Size
		}
		r.progress.finish(ref, size, p.err)
		if p.err == nil {
			took := time.Since(start).Truncate(time.Millisecond)
			r.events.Add("Normal", "Pulled", object, "Successfully pulled image %q in %s (%s including waiting). Image size: %d bytes.", ref, took, took, p.img.Size)
		} else {
			r.events.Add("Warning", "Failed", object, "Failed to pull image %q: %v", ref, p.err)
		}
		close(p.done)
	} else {
		r.pullMu.Unlock()
		<-p.done
	}
	if p.err != nil {
		return nil, &startError{Reason: ReasonErrImagePull, Waiting: true, Message: p.err.Error()}
	}
	return p.img, nil
}

// pullSecrets reads the pod's imagePullSecrets from the store now, as the
// kubelet reads them for each sync (kubelet_pods.go getPullSecretsForPod): a
// Secret that is missing is named in a FailedToRetrieveImagePullSecret
// warning and the pull goes on without it; one that is not a docker config
// adds nothing.
func (r *podRunner) pullSecrets() *image.Keyring {
	refs := r.plan.Pod.Spec.ImagePullSecrets
	if len(refs) == 0 {
		return nil
	}
	stored := r.l.Secrets(r.plan.Pod.Namespace)
	k := &image.Keyring{}
	var missing []string
	for _, ref := range refs {
		if ref.Name == "" {
			continue
		}
		s, ok := stored[ref.Name]
		if !ok {
			missing = append(missing, ref.Name)
			continue
		}
		if err := k.AddSecret(s.Name, string(s.Type), s.Data); err != nil {
			r.events.Add("Warning", "FailedToRetrieveImagePullSecret", "", "%v", err)
		}
	}
	if len(missing) > 0 {
		r.events.Add("Warning", "FailedToRetrieveImagePullSecret", "", "Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	return k
}

// prepull pulls the images the pod's containers will need, all at once, so
// that init containers do not wait for one another's pulls; a container that
// starts meanwhile joins the pull in flight.
func (r *podRunner) prepull(ctx context.Context) {
	if r.hasImageVolumes() {
		// The first start takes this round (volumeRound).
		go r.volumeRound(ctx, false)
	}
	seen := map[string]bool{}
	for _, list := range [][]corev1.Container{r.plan.Pod.Spec.InitContainers, r.plan.Pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if seen[c.Image] || c.ImagePullPolicy == corev1.PullNever {
				continue
			}
			seen[c.Image] = true
			if c.ImagePullPolicy != corev1.PullAlways {
				if _, err := r.store.Lookup(c.Image); err == nil {
					continue
				}
			}
			go func() { _, _ = r.ensureImage(ctx, c) }()
		}
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Start creates and starts one run of a container. A container created ahead
// of its turn (createAhead) is released here, if it was made from the same
// image and config that it would be made from now; otherwise it is destroyed
// and the container created anew.
func (r *podRunner) Start(ctx context.Context, c *corev1.Container, restartCount int32) (containerHandle, error) {
	// The image volumes first: the kubelet fails a container whose image
	// volume is missing before it pulls the container's image (SyncPod's
	// toKubeContainerImageVolumes, then startContainer).
	imgVols, err := r.imageVolumes(ctx, c)
	if err != nil {
		return nil, err
	}
	img, err := r.ensureImage(ctx, c)
	if err != nil {
		return nil, err
	}
	r.waitClusterDNS(ctx)
	pc := r.takeAhead(c, img)
	// The containers after c are created beside c's own creation: c's turn
	// has come, so theirs is next (createAhead).
	r.createAhead(ctx, r.after(c))
	if pc == nil {
		if pc, err = r.create(c, img, false, restartCount, imgVols); err != nil {
			return nil, err
		}
	}
	return r.release(pc, restartCount)
}

// StartEphemeral creates and starts an ephemeral container (the
// ephemeralcontainers subresource, `podrun debug`) in the pod's sandbox: the
// pod's network, IPC and UTS namespaces, its volumes and cgroup, and, when
// it names a running target container and the pod does not share one PID
// namespace, the target's PID namespace, as the kubelet asks the runtime
// for NamespaceMode_TARGET (kuberuntime_container.go
// generateContainerConfig, containerd's WithPodNamespaces). It runs once:
// the supervisor never starts it again.
func (r *podRunner) StartEphemeral(ctx context.Context, c *corev1.Container, target ContainerHandle) (ContainerHandle, error) {
	pidNS := ""
	if target != nil && r.sb.pidNS == "" && !r.plan.Pod.Spec.HostPID {
		tc, ok := target.(*podContainer)
		if !ok || tc.rc.pid() <= 0 {
			return nil, &startError{Reason: "CreateContainerError", Waiting: true, Message: "the target container is not running"}
		}
		pidNS = fmt.Sprintf("/proc/%d/ns/pid", tc.rc.pid())
	}
	r.ephMu.Lock()
	if r.ephemeral == nil {
		r.ephemeral = map[string]string{}
	}
	r.ephemeral[c.Name] = pidNS
	r.ephMu.Unlock()
	imgVols, err := r.imageVolumes(ctx, c)
	if err != nil {
		return nil, err
	}
	img, err := r.ensureImage(ctx, c)
	if err != nil {
		return nil, err
	}
	pc, err := r.create(c, img, false, 0, imgVols)
	if err != nil {
		return nil, err
	}
	return r.release(pc, 0)
}

// ephemeralPIDNS says whether name is an ephemeral container of the pod, and
// the PID namespace it joins.
func (r *podRunner) ephemeralPIDNS(name string) (string, bool) {
	r.ephMu.Lock()
	defer r.ephMu.Unlock()
	ns, ok := r.ephemeral[name]
	return ns, ok
}

// clusterDNSWait bounds how long a pod's first container waits for the
// cluster DNS (waitClusterDNS).
const clusterDNSWait = 5 * time.Second

// waitClusterDNS holds the pod's first container process until the services
// owner serves the cluster DNS that the pod's resolv.conf names: on a node
// CoreDNS runs before the pods that use it, while podrun starts its owner
// beside a store's first pod, so a container that looks a name up at once
// (a Service, or a name outside the cluster) would otherwise find no server.
// Only pods whose resolv.conf names the cluster DNS (network.UsesClusterDNS,
// and the address recorded in their settings, as the sandbox writes it) wait,
// once, at most clusterDNSWait: an owner that cannot start is the apply's
// warning, and the pod runs without it as it did before.
func (r *podRunner) waitClusterDNS(ctx context.Context) {
	r.dnsOnce.Do(func() {
		if r.l.ClusterDNS == "" || !network.UsesClusterDNS(r.plan.Pod) {
			return
		}
		deadline := time.Now().Add(clusterDNSWait)
		for store.OwnerPid(r.l.ServicesOwner()) == 0 && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
}

// StartAhead creates the pod's first containers in start order ahead of
// their turn, as soon as the sandbox is up, so that their creation overlaps
// instead of following one another (createAhead).
func (r *podRunner) StartAhead(ctx context.Context) { r.createAhead(ctx, r.order(0)) }

// DiscardAhead destroys the containers created ahead whose turn did not come
// (an init container failed for good, the pod is stopping) and creates no
// more: the supervisor calls it once the pod's containers have stopped.
func (r *podRunner) DiscardAhead() { r.discardAhead() }

// created is a container run whose container exists; with ahead, its init
// waits on libcontainer's exec fifo and its log is opened at release.
type created struct {
	c            *corev1.Container
	img          *image.Image
	cfg          *containerConfig
	rc           *runningContainer
	cdir, rootfs string
	ahead        bool
	ready        chan struct{} // closed once logw is set (nil: the output is dropped)
	logw         *logs.Writer
	output       chan struct{}
}

// create makes one run of a container: a fresh writable layer, the rootfs
// mount, the process file, and the libcontainer container. Without ahead the
// process runs at once, its log opened and its Created event written first;
// with ahead it waits for release. imgVols are the mounts of c's image
// volumes (imageVolumes).
func (r *podRunner) create(c *corev1.Container, img *image.Image, ahead bool, restartCount int32, imgVols map[string]string) (*created, error) {
	r.waitReleased(c.Name)
	id := newContainerID()
	rootfs := r.paths.RootfsDir(c.Name)
	cdir := r.paths.ContainerDir(c.Name)
	cfg, err := r.containerConfig(c, img, id, rootfs, cdir, imgVols)
	if ise := (*volumes.ImageSubPathError)(nil); errors.As(err, &ise) {
		// The runtime's refusal, not the kubelet's: the creation fails.
		return nil, &startError{Reason: ReasonCreateContainerError, Waiting: true, Message: imageVolumeMountFailed + ": " + err.Error()}
	}
	if err != nil {
		return nil, &startError{Reason: "CreateContainerConfigError", Waiting: true, Message: err.Error()}
	}
	if c.Stdin {
		cfg.StdinFifo, cfg.StdinOnce = r.paths.StdinFifo(c.Name), c.StdinOnce
	}
	fail := func(err error) (*created, error) {
		_ = image.UnmountRootfs(rootfs)
		return nil, &startError{Reason: ReasonStartError, Message: err.Error()}
	}
	// Every run gets a fresh writable layer, as a new container does on a node.
	upper, work := filepath.Join(cdir, "upper"), filepath.Join(cdir, "work")
	_ = image.UnmountRootfs(rootfs)
	for _, d := range []string{upper, work} {
		if err := os.RemoveAll(d); err != nil {
			return fail(err)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail(err)
		}
	}
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return fail(err)
	}
	layers, err := r.store.LayerDirs(img)
	if err != nil {
		return fail(err)
	}
	if base := int(r.sb.usernsBase); base != 0 {
		// The pod's own user namespace: the image's files seen through
		// idmapped layers, the writable layer owned by the pod's root.
		for _, d := range []string{upper, work} {
			if err := os.Chown(d, base, base); err != nil {
				return fail(err)
			}
		}
		mapped, closeLayers, err := image.IDMapLayers(layers, r.sb.usernsFile)
		if err != nil {
			return fail(err)
		}
		defer closeLayers()
		layers = mapped
	}
	if err := image.MountRootfs(layers, upper, work, rootfs); err != nil {
		return fail(fmt.Errorf("mounting the container's root filesystem: %w", err))
	}
	if err := resolveUser(cfg, c, r.plan.Pod, img.Config.User, rootfs); err != nil {
		_ = image.UnmountRootfs(rootfs)
		return nil, &startError{Reason: "CreateContainerConfigError", Waiting: true, Message: err.Error()}
	}
	// Rewritten for every run: no fsync (replaceFile).
	procData, err := json.Marshal(processSpec{Env: cfg.Env, Cwd: cfg.Cwd, UID: cfg.User.Uid, GID: cfg.User.Gid, Sgids: cfg.User.Sgids})
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(filepath.Dir(r.paths.ProcessFile(c.Name)), 0o700); err != nil {
		return fail(err)
	}
	if err := store.ReplaceFile(r.paths.ProcessFile(c.Name), procData); err != nil {
		return fail(err)
	}
	pc := &created{c: c, img: img, cfg: cfg, cdir: cdir, rootfs: rootfs, ahead: ahead, ready: make(chan struct{}), output: make(chan struct{})}
	if !ahead {
		if err := r.openLog(pc, restartCount); err != nil {
			return fail(err)
		}
	}
	var wrote sync.Once
	rc, err := startContainer(r.paths.StateRoot(), cfg, ahead, func(stream string, rd io.Reader) {
		<-pc.ready
		if pc.logw == nil {
			_, _ = io.Copy(io.Discard, rd)
			return
		}
		_ = pc.logw.Relay(stream, &firstOutput{r: rd, seen: func() { wrote.Do(func() { close(pc.output) }) }})
	})
	if err != nil {
		if pc.logw != nil {
			pc.logw.Close()
		} else {
			close(pc.ready)
		}
		return fail(err)
	}
	pc.rc = rc
	return pc, nil
}

// openLog opens the run's log file, drops the logs of older runs, and writes
// the Created event: what the kubelet's CreateContainer does just before the
// container can run.
func (r *podRunner) openLog(pc *created, restartCount int32) error {
	logw, err := logs.Open(r.paths.LogFile(pc.c.Name, restartCount), r.logOptions(pc.c))
	if err != nil {
		return err
	}
	removeOldRuns(r.paths, pc.c.Name, restartCount)
	pc.logw = logw
	close(pc.ready)
	r.events.Add("Normal", "Created", r.object(pc.c), "Created container %s", pc.c.Name)
	return nil
}

// release lets a created container run and returns its handle.
func (r *podRunner) release(pc *created, restartCount int32) (containerHandle, error) {
	if pc.ahead {
		if err := r.openLog(pc, restartCount); err != nil {
			r.discard(pc)
			return nil, &startError{Reason: ReasonStartError, Message: err.Error()}
		}
		if err := pc.rc.release(); err != nil {
			r.discard(pc)
			return nil, &startError{Reason: ReasonStartError, Message: fmt.Sprintf("starting container process: %v", err)}
		}
	}
	return &podContainer{r: r, c: pc.c, rc: pc.rc, cfg: pc.cfg, logw: pc.logw, started: time.Now(), cdir: pc.cdir, img: pc.img, output: pc.output}, nil
}

// discard ends a created container that never ran its process (or whose
// start failed): its waiting init is killed and reaped, its libcontainer
// state and cgroup removed, its rootfs unmounted.
func (r *podRunner) discard(pc *created) {
	select {
	case <-pc.ready:
	default:
		close(pc.ready) // its output, if any, is dropped
	}
	_ = pc.rc.lc.Signal(syscall.SIGKILL)
	_, _ = pc.rc.proc.Wait()
	pc.rc.relayed.Wait()
	_ = pc.rc.lc.Destroy()
	if pc.logw != nil {
		_ = pc.logw.Close()
	}
	_ = image.UnmountRootfs(pc.rootfs)
}

// ahead is a container being created, or created, ahead of its turn.
type ahead struct {
	done chan struct{}
	pc   *created // nil when the creation failed
}

// aheadWindow is how many containers at most wait created ahead of their
// turn: each is a waiting init process (a few MiB), and on a host of a few
// cores creating more at once only makes the first one later.
const aheadWindow = 3

// order is the pod's start order from position i on, up to its first
// sidecar: the init containers one by one, then every app container. After
// a sidecar the next container's turn is a matter of time (the sidecar's
// first output, or one PLEG relist), not of an exit: the kubelet only then
// creates it, and so does podrun.
func (r *podRunner) order(i int) []*corev1.Container {
	inits, apps := r.plan.Pod.Spec.InitContainers, r.plan.Pod.Spec.Containers
	var all []*corev1.Container
	for k := range inits {
		all = append(all, &inits[k])
	}
	for k := range apps {
		all = append(all, &apps[k])
	}
	var out []*corev1.Container
	for ; i < len(all); i++ {
		out = append(out, all[i])
		if c := all[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			break
		}
	}
	return out
}

// after is the start order after c (nothing after a sidecar).
func (r *podRunner) after(c *corev1.Container) []*corev1.Container {
	inits := r.plan.Pod.Spec.InitContainers
	for i := range inits {
		if inits[i].Name == c.Name {
			if inits[i].RestartPolicy != nil && *inits[i].RestartPolicy == corev1.ContainerRestartPolicyAlways {
				return nil
			}
			return r.order(i + 1)
		}
	}
	return nil // app containers start together: none comes after another
}

// createAhead creates containers of next, in order, ahead of their turn (up
// to aheadWindow waiting at once), so that their inits (namespaces, mounts,
// cgroup) are ready when their turn comes. Their processes wait on
// libcontainer's exec fifo until Start releases them, so no init container's
// process runs before the previous one has succeeded. Only containers whose
// image is present and is not pulled again (imagePullPolicy Always) are
// created ahead, and none with a subPath mount: the kubelet resolves a
// subPath when the container is created, and an earlier init container may
// be the one that makes it (a file, say); the pull events keep their place.
func (r *podRunner) createAhead(ctx context.Context, next []*corev1.Container) {
	for _, n := range next {
		if !r.aheadable(n) || ctx.Err() != nil {
			continue
		}
		img, err := r.store.Lookup(n.Image)
		if err != nil {
			continue
		}
		r.aheadMu.Lock()
		if r.closed || len(r.ahead) >= aheadWindow {
			r.aheadMu.Unlock()
			return
		}
		if r.ahead[n.Name] != nil || r.taken[n.Name] {
			r.aheadMu.Unlock()
			continue
		}
		if r.ahead == nil {
			r.ahead = map[string]*ahead{}
		}
		a := &ahead{done: make(chan struct{})}
		r.ahead[n.Name] = a
		r.aheadMu.Unlock()
		go func() {
			defer close(a.done)
			a.pc, _ = r.create(n, img, true, 0, nil)
		}()
	}
}

// aheadable says whether c may be created before its turn: not with an
// image volume either, whose pull and events come at its turn (SyncPod's
// getImageVolumes).
func (r *podRunner) aheadable(c *corev1.Container) bool {
	if r.mountsImageVolume(c) {
		return false
	}
	policy := c.ImagePullPolicy
	if policy == "" {
		policy = podspec.ImagePullPolicyFor(c.Image)
	}
	if policy == corev1.PullAlways {
		return false
	}
	for _, m := range c.VolumeMounts {
		if m.SubPath != "" || m.SubPathExpr != "" {
			return false
		}
	}
	return true
}

// takeAhead returns c's container created ahead, when it was made from img
// and with the environment and command c would get now (the kubelet resolves
// them at creation: a Service or ConfigMap changed meanwhile counts); any
// other is destroyed.
func (r *podRunner) takeAhead(c *corev1.Container, img *image.Image) *created {
	r.aheadMu.Lock()
	a := r.ahead[c.Name]
	delete(r.ahead, c.Name)
	if r.taken == nil {
		r.taken = map[string]bool{}
	}
	r.taken[c.Name] = true // its first run is under way: never ahead again
	r.aheadMu.Unlock()
	if a == nil {
		return nil
	}
	<-a.done
	pc := a.pc
	if pc == nil {
		return nil
	}
	if pc.img.ID == img.ID {
		if now, err := r.containerConfig(c, img, pc.cfg.ID, pc.rootfs, pc.cdir, nil); err == nil &&
			slices.Equal(now.Env, pc.cfg.Env) && slices.Equal(now.Args, pc.cfg.Args) {
			return pc
		}
	}
	r.discard(pc)
	return nil
}

// discardAhead destroys every container created ahead whose turn did not
// come (an init container failed, the pod is stopping), and creates no more.
func (r *podRunner) discardAhead() {
	r.aheadMu.Lock()
	r.closed = true
	all := r.ahead
	r.ahead = nil
	r.aheadMu.Unlock()
	for _, a := range all {
		<-a.done
		if a.pc != nil {
			r.discard(a.pc)
		}
	}
}

// StopSignal is the image's STOPSIGNAL, else SIGTERM.
func (r *podRunner) StopSignal(c *corev1.Container) syscall.Signal {
	if img, err := r.store.Lookup(c.Image); err == nil && img.Config.StopSignal != "" {
		if sig, ok := parseSignal(img.Config.StopSignal); ok {
			return sig
		}
	}
	return syscall.SIGTERM
}

// containerConfig merges the pod spec with the image the way the kubelet and
// containerd do: command/args with ENTRYPOINT/CMD, env with the image's ENV.
func (r *podRunner) containerConfig(c *corev1.Container, img *image.Image, id, rootfs, cdir string, imgVols map[string]string) (*containerConfig, error) {
	rt := r.sb.runtimeInfo()
	if ServiceEnv != nil {
		// The Services that exist as the container starts (the kubelet's getServiceEnvVarMap).
		rt.ServiceEnv = ServiceEnv(r.l, r.plan.Pod)
	}
	// Resolved once: a fileKeyRef's file is read once per start.
	podEnv, err := r.plan.PodEnv(c, rt)
	if err != nil {
		return nil, err
	}
	env := r.plan.MergeEnv(podEnv, img.Config.Env, rt)
	// $(VAR) in command and args sees only the variables the pod defines, not the image's ENV.
	args, err := podspec.CommandLine(c, img.Config.Entrypoint, img.Config.Cmd, podEnv)
	if err != nil {
		return nil, err
	}
	cwd := c.WorkingDir
	if cwd == "" {
		cwd = img.Config.WorkingDir
	}
	if cwd == "" {
		cwd = "/"
	}
	envMap := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envMap[k] = v
		}
	}
	volMounts, err := r.sb.volumes.Mounts(c, envMap, imgVols)
	if err != nil {
		return nil, err
	}
	mounts := r.podMounts(c, cdir)
	for _, m := range volMounts {
		mounts = append(mounts, volumeMountSpec(m))
	}
	cfg := &containerConfig{
		ID:          id,
		Rootfs:      rootfs,
		Args:        args,
		Env:         env,
		Cwd:         cwd,
		Mounts:      mounts,
		NetNS:       r.sb.net.NetNSPath,
		HostNetwork: r.sb.hostNetwork,
		IPCNS:       r.sb.ipcNS,
		HostIPC:     r.sb.hostIPC,
		HostPID:     r.plan.Pod.Spec.HostPID,
		PIDNS:       r.sb.pidNS,
		UTSNS:       r.sb.utsNS,
		CgroupsPath: r.sb.cgroup.ContainerCgroupsPath(id),
		// Without it libcontainer reads slice:prefix:name as a cgroupfs path.
		SystemdCgroup: r.sb.cgroup.Driver() == cgroups.DriverSystemd,
		Resources:     cgroups.ContainerResources(c, r.plan.Pod.Spec.Resources).LinuxResources(),
		UserNSBase:    r.sb.usernsBase,
		MqueueDir:     r.sb.mqueue,
	}
	if ns, ok := r.ephemeralPIDNS(c.Name); ok && ns != "" {
		cfg.PIDNS = ns // the target container's
	}
	if !r.sb.hostNetwork {
		cfg.Hostname = r.sb.hostname
	}
	if sc := c.SecurityContext; sc != nil {
		cfg.Privileged = sc.Privileged != nil && *sc.Privileged
		cfg.UnmaskedProc = sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount
		cfg.ReadonlyRootfs = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
		cfg.NoNewPrivileges = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				cfg.CapAdd = append(cfg.CapAdd, string(c))
			}
			for _, c := range sc.Capabilities.Drop {
				cfg.CapDrop = append(cfg.CapDrop, string(c))
			}
		}
	}
	if psc := r.plan.Pod.Spec.SecurityContext; psc != nil && len(psc.Sysctls) > 0 {
		cfg.Sysctls = map[string]string{}
		for _, s := range psc.Sysctls {
			cfg.Sysctls[s.Name] = s.Value
		}
	}
	cfg.Seccomp, cfg.SeccompDir = seccompProfile(r.plan.Pod, c), r.l.SeccompDir()
	if cfg.Seccomp == nil && r.settings.SeccompDefault {
		// The kubelet's --seccomp-default (getSeccompProfile's fallbackToRuntimeDefault).
		cfg.Seccomp = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	adj := restrictOOMScoreAdj(oomScoreAdj(r.plan, c))
	cfg.OOMScoreAdj = &adj
	return cfg, nil
}

// volumeMountSpec is the OCI mount of a volume, with every option computed
// for it, as containerd's CRI plugin builds it (WithMounts): "rro" makes
// runc set MOUNT_ATTR_RDONLY with AT_RECURSIVE, so submounts are read-only
// too, and bindMountOptions (noexec, nodev, nosuid) are bind flags.
func volumeMountSpec(m volumes.Mount) specs.Mount {
	opts := []string{"rbind", m.Propagation}
	if m.ReadOnly {
		opts = append(opts, "ro")
	}
	if m.RecursiveReadOnly {
		opts = append(opts, "rro")
	}
	opts = append(opts, m.Options...)
	return specs.Mount{Destination: m.Destination, Type: "bind", Source: m.Source, Options: opts}
}

// podMounts are the files the runtime itself gives every container: /etc/hosts,
// /etc/hostname, /etc/resolv.conf, /dev/shm and the termination-message file.
func (r *podRunner) podMounts(c *corev1.Container, cdir string) []specs.Mount {
	declared := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		declared[filepath.Clean(vm.MountPath)] = true
	}
	var out []specs.Mount
	bind := func(src, dst string, ro bool) {
		if declared[dst] {
			return
		}
		opts := []string{"rbind", "rprivate"}
		if ro {
			opts = append(opts, "ro")
		}
		out = append(out, specs.Mount{Destination: dst, Type: "bind", Source: src, Options: opts})
	}
	bind(r.sb.etcHosts, "/etc/hosts", false)
	bind(r.sb.hostnameFile, "/etc/hostname", false)
	bind(r.sb.resolvConf, "/etc/resolv.conf", false)
	if r.sb.shm != "" {
		bind(r.sb.shm, "/dev/shm", false)
	} else {
		bind("/dev/shm", "/dev/shm", false)
	}
	if p := c.TerminationMessagePath; p != "" {
		f := filepath.Join(cdir, "termination-log")
		if err := os.MkdirAll(cdir, 0o755); err == nil {
			if err := os.WriteFile(f, nil, 0o666); err == nil {
				_ = os.Chmod(f, 0o666)
				bind(f, p, false)
			}
		}
	}
	return out
}

// oomScoreAdj is the kubelet's policy (pkg/kubelet/qos/policy.go).
func oomScoreAdj(plan *podspec.Plan, c *corev1.Container) int {
	switch plan.QOS {
	case corev1.PodQOSGuaranteed:
		return -997
	case corev1.PodQOSBestEffort:
		return 1000
	}
	capacity := hostMemory()
	if capacity <= 0 {
		return 999
	}
	adj := 1000 - (1000*c.Resources.Requests.Memory().Value())/capacity
	if podspec.IsSidecar(c) {
		// A sidecar is no more likely to be killed than the app containers it serves.
		for _, a := range plan.Pod.Spec.Containers {
			adj = min(adj, 1000-(1000*a.Resources.Requests.Memory().Value())/capacity)
		}
	}
	switch {
	case adj < 3:
		return 3
	case adj >= 1000:
		return 999
	}
	return int(adj)
}

// restrictOOMScoreAdj keeps adj at or above podrun's own oom_score_adj when
// podrun may not lower it (no CAP_SYS_RESOURCE, as in many CI sandboxes), as
// containerd's restrict_oom_score_adj does; otherwise runc fails to start the
// container.
func restrictOOMScoreAdj(adj int) int {
	return max(adj, ownOOMScoreAdjFloor())
}

// ownOOMScoreAdjFloor is the lowest oom_score_adj podrun may give: anything
// with CAP_SYS_RESOURCE, else its own value (which does not change).
var ownOOMScoreAdjFloor = sync.OnceValue(func() int {
	if c, err := capability.NewPid2(0); err == nil && c.Load() == nil && c.Get(capability.EFFECTIVE, capability.CAP_SYS_RESOURCE) {
		return -1000
	}
	data, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return -1000
	}
	cur, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return -1000
	}
	return cur
})

func hostMemory() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// resolveUser decides the uid, gid and groups of the container's process:
// securityContext first (container over pod), then the image's USER, with
// names looked up in the container's own /etc/passwd and /etc/group.
func resolveUser(cfg *containerConfig, c *corev1.Container, pod *corev1.Pod, imageUser, rootfs string) error {
	var runAsUser, runAsGroup *int64
	var runAsNonRoot *bool
	if psc := pod.Spec.SecurityContext; psc != nil {
		runAsUser, runAsGroup, runAsNonRoot = psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			runAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			runAsGroup = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			runAsNonRoot = sc.RunAsNonRoot
		}
	}
	if err := verifyRunAsNonRoot(runAsNonRoot, runAsUser, imageUser, c, pod); err != nil {
		return err
	}
	spec := imageUser
	if runAsUser != nil {
		spec = strconv.FormatInt(*runAsUser, 10)
	}
	if runAsGroup != nil {
		u, _, _ := strings.Cut(spec, ":")
		if u == "" {
			u = "0"
		}
		spec = u + ":" + strconv.FormatInt(*runAsGroup, 10)
	}
	passwd, _ := securejoin.SecureJoin(rootfs, "/etc/passwd")
	group, _ := securejoin.SecureJoin(rootfs, "/etc/group")
	eu, err := user.GetExecUserPath(spec, &user.ExecUser{Uid: 0, Gid: 0, Home: "/"}, passwd, group)
	if err != nil {
		return fmt.Errorf("resolving user %q in the image: %w", spec, err)
	}
	// The groups as containerd gives them to the process: the primary group
	// and, under the Merge policy (the default), the groups the image's
	// /etc/group lists the user in; then the kubelet's fsGroup and
	// supplementalGroups (determineEffectiveSecurityContext). Strict leaves
	// the image's groups out (SupplementalGroupsPolicyStrict).
	groups := []int{eu.Gid}
	psc := pod.Spec.SecurityContext
	if psc == nil || psc.SupplementalGroupsPolicy == nil || *psc.SupplementalGroupsPolicy != corev1.SupplementalGroupsPolicyStrict {
		groups = append(groups, eu.Sgids...)
	}
	if psc != nil {
		if psc.FSGroup != nil {
			groups = append(groups, int(*psc.FSGroup))
		}
		for _, g := range psc.SupplementalGroups {
			groups = append(groups, int(g))
		}
	}
	eu.Sgids = nil
	seen := map[int]bool{}
	for _, g := range groups {
		if !seen[g] {
			seen[g] = true
			eu.Sgids = append(eu.Sgids, g)
		}
	}
	cfg.User = *eu
	return nil
}

// containerUser is the identity the container status reports
// (status.containerStatuses[].user.linux, from the CRI's ContainerStatus):
// uid, gid and every group of the process, the primary one first.
func containerUser(u user.ExecUser) *corev1.ContainerUser {
	l := &corev1.LinuxContainerUser{UID: int64(u.Uid), GID: int64(u.Gid)}
	for _, g := range u.Sgids {
		l.SupplementalGroups = append(l.SupplementalGroups, int64(g))
	}
	return &corev1.ContainerUser{Linux: l}
}

// verifyRunAsNonRoot is the kubelet's (kuberuntime/security_context_others.go)
// with the image user as the CRI reports it (containerd's getUserFromImage):
// the part before ':', a uid when numeric, else a name, which the kubelet
// cannot check and refuses; no USER is root.
func verifyRunAsNonRoot(runAsNonRoot *bool, runAsUser *int64, imageUser string, c *corev1.Container, pod *corev1.Pod) error {
	if runAsNonRoot == nil || !*runAsNonRoot {
		return nil
	}
	podName := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID) // format.Pod
	if runAsUser != nil {
		if *runAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podName, c.Name)
		}
		return nil
	}
	name, _, _ := strings.Cut(imageUser, ":")
	if name == "" {
		name = "0"
	}
	uid, err := strconv.ParseInt(name, 10, 64)
	switch {
	case err != nil:
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", name, podName, c.Name)
	case uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podName, c.Name)
	}
	return nil
}

// podContainer is one run of a container in a pod.
type podContainer struct {
	r       *podRunner
	c       *corev1.Container
	rc      *runningContainer
	cfg     *containerConfig
	logw    *logs.Writer
	started time.Time
	cdir    string
	img     *image.Image
	output  chan struct{}
}

// firstOutput calls seen when the first bytes of a container's output arrive.
type firstOutput struct {
	r    io.Reader
	seen func()
}

func (f *firstOutput) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	if n > 0 {
		f.seen()
	}
	return n, err
}

func (p *podContainer) ID() string { return p.rc.id }

func (p *podContainer) User() *corev1.ContainerUser { return containerUser(p.cfg.User) }

// Output is closed once the container has written its first output.
func (p *podContainer) Output() <-chan struct{} { return p.output }

// Image reports the image as containerd does: its name, and repo@digest as its ID.
func (p *podContainer) Image() (string, string) {
	name := p.c.Image
	if n, err := image.NormalizeName(p.c.Image); err == nil {
		name = n
	}
	if p.img.Digest == "" {
		return name, p.img.ID
	}
	repo := name
	if i := strings.LastIndex(repo, "@"); i >= 0 {
		repo = repo[:i]
	} else if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return name, repo + "@" + p.img.Digest
}

func (p *podContainer) Signal(sig syscall.Signal) error { return p.rc.signal(sig) }

// Wait waits for the run to end and collects its result; the run's resources
// (libcontainer state, cgroup, rootfs mount) are released in the background,
// so that the exit is reported, and the next init container starts, without
// waiting for that (the next run of the same container waits in Start, the
// sandbox's teardown in Supervise).
func (p *podContainer) Wait() exitResult {
	es := p.rc.wait()
	finished := time.Now()
	oom := p.rc.oomKilled()
	res := exitResult{
		ExitCode:   es.Code,
		Reason:     ExitReason(es.Code, oom),
		StartedAt:  p.started,
		FinishedAt: finished,
	}
	res.Message = p.terminationMessage(es.Code)
	_ = p.logw.Close()
	done := make(chan struct{})
	r := p.r
	r.releaseMu.Lock()
	if r.released == nil {
		r.released = map[string]chan struct{}{}
	}
	r.released[p.c.Name] = done
	r.releaseMu.Unlock()
	r.releasing.Add(1)
	go func() {
		defer r.releasing.Done()
		defer close(done)
		_ = p.rc.destroy()
		_ = image.UnmountRootfs(p.cfg.Rootfs)
	}()
	return res
}

// maxExecOutput bounds what a probe or hook keeps of a command's output (the kubelet's 10 KiB).
const maxExecOutput = 10 * 1024

// Exec runs a command in the container, as the kubelet's exec probes and hooks
// do, and returns its exit code and (bounded) combined output. The command is
// killed when ctx ends.
func (p *podContainer) Exec(ctx context.Context, cmd []string) (int, []byte, error) {
	out := &limitedBuffer{max: maxExecOutput}
	ps := processSpec{Env: p.cfg.Env, Cwd: p.cfg.Cwd, UID: p.cfg.User.Uid, GID: p.cfg.User.Gid, Sgids: p.cfg.User.Sgids}
	proc, err := execProcess(p.rc.lc, ps, cmd, ExecOptions{Stdout: out, Stderr: out})
	if err != nil {
		return 0, nil, err
	}
	done := make(chan struct{})
	var code int
	var werr error
	go func() { code, werr = waitExit(proc); close(done) }()
	select {
	case <-done:
		return code, out.Bytes(), werr
	case <-ctx.Done():
		_ = proc.Signal(syscall.SIGKILL)
		<-done
		return code, out.Bytes(), ctx.Err()
	}
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *limitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...)
}

// The kubelet's limits for termination messages (kuberuntime_container.go).
const (
	maxTerminationMessageBytes = 4096
	fallbackLogLines           = 80
	fallbackLogBytes           = 2048
)

func (p *podContainer) terminationMessage(code int32) string {
	if p.c.TerminationMessagePath != "" {
		f, err := os.Open(filepath.Join(p.cdir, "termination-log"))
		if err == nil {
			data, _ := io.ReadAll(io.LimitReader(f, maxTerminationMessageBytes))
			f.Close()
			if len(data) > 0 {
				return string(data)
			}
		}
	}
	if p.c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && code != 0 {
		data, err := logs.Tail(p.logw.Path(), fallbackLogLines, fallbackLogBytes)
		if err == nil {
			return string(data)
		}
	}
	return ""
}

// parseSignal understands "SIGTERM", "TERM" and "15".
func parseSignal(s string) (syscall.Signal, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return syscall.Signal(n), n > 0 && n < 65
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig := unix.SignalNum(name)
	return sig, sig != 0
}
