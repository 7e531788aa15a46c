package runtime

import (
	"context"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/network"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/volumes"
)

// The run contract between the supervisor and the containers it runs: how a
// run ended, a started run, and why a start failed. The supervisor drives a
// PodRunner through them.

// ExitResult is how one container run ended.
type ExitResult struct {
	ExitCode   int32  // 128+signal for a killed process; the kubelet never reports the signal itself
	Reason     string // Completed | Error | OOMKilled | StartError | ContainerCannotRun
	Message    string
	StartedAt  time.Time
	FinishedAt time.Time
}

// ContainerHandle is one started container run.
type ContainerHandle interface {
	ID() string
	// Image and ImageID are the image's normalised name and its digest reference.
	Image() (name, id string)
	// User is the process's identity, as the container status reports it.
	User() *corev1.ContainerUser
	// Exec runs a command in the container (exec probes and hooks).
	Exec(ctx context.Context, cmd []string) (int, []byte, error)
	// Wait blocks until the run has ended and its resources are released.
	Wait() ExitResult
	Signal(sig syscall.Signal) error
	// Output is closed once the run has written its first output.
	Output() <-chan struct{}
}

// StartError says a container could not be started; Waiting errors leave the
// container waiting (image pull, configuration), the others count as a run
// that ended (StartError), as with the kubelet.
type StartError struct {
	Reason  string // ErrImagePull | CreateContainerConfigError | StartError ...
	Message string
	Waiting bool
	// Image is the image whose pull failed when it is an image volume's,
	// not the container's own: its pull backs off, and the image manager
	// records its events against the pod (getImageVolumes).
	Image string
}

func (e *StartError) Error() string { return e.Message }

type (
	exitResult      = ExitResult
	containerHandle = ContainerHandle
	startError      = StartError
)

// ExitReason is the kubelet's terminated reason for an exit.
func ExitReason(code int32, oom bool) string {
	switch {
	case oom:
		return ReasonOOMKilled
	case code == 0:
		return ReasonCompleted
	}
	return ReasonError
}

// The kubelet's status words the runner reports.
const (
	ReasonOOMKilled    = store.ReasonOOMKilled
	ReasonCompleted    = store.ReasonCompleted
	ReasonError        = store.ReasonError
	ReasonStartError   = store.ReasonStartError
	ReasonErrImagePull = store.ReasonErrImagePull
	// ReasonErrImageNeverPull: imagePullPolicy Never and the image is not
	// in the store (images.ErrImageNeverPull).
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	// ReasonCreateContainerError: the runtime could not create the
	// container (kuberuntime.ErrCreateContainer), e.g. an image volume's
	// subPath that the image does not have.
	ReasonCreateContainerError = "CreateContainerError"
)

// PodRunner starts a pod's containers in its sandbox with libcontainer.
type PodRunner = podRunner

// WaitReleased waits for the releases of finished containers still in flight.
func (r *podRunner) WaitReleased() { r.releasing.Wait() }

// Sandbox is a pod's namespaces, network, volumes and cgroup.
type Sandbox = sandbox

// NewPodRunner returns the runner of a pod whose sandbox is up.
func NewPodRunner(l store.Layout, paths store.PodPaths, plan *podspec.Plan, sb *Sandbox, images *image.Store, events *store.EventLog, settings store.Settings) *PodRunner {
	return &podRunner{l: l, paths: paths, plan: plan, sb: sb, store: images, events: events, pulls: map[string]*pull{}, settings: settings, progress: pullProgress{paths: paths}}
}

// Prepull pulls all of the pod's images in parallel.
func (r *podRunner) Prepull(ctx context.Context) { r.prepull(ctx) }

// SetupSandbox builds the pod's sandbox; notes receives what the user should know.
func SetupSandbox(ctx context.Context, l store.Layout, paths store.PodPaths, plan *podspec.Plan, pidsLimit int64, notes func(string)) (*Sandbox, error) {
	return setupSandbox(ctx, l, paths, plan, pidsLimit, notes)
}

// Network is what the network package set up for the pod.
func (sb *sandbox) Network() *network.Result { return sb.net }

// Volumes are the pod's volumes as set up on the host.
func (sb *sandbox) Volumes() []volumes.Volume { return sb.volumes.Volumes() }

// TeardownSandbox releases everything the pod's sandbox holds; it works from
// the record alone and again after a crash.
func TeardownSandbox(l store.Layout, paths store.PodPaths, uid string) error {
	return teardownSandbox(l, paths, uid)
}

// RefreshVolumes rewrites the pod's configMap, secret, downwardAPI and
// projected volumes from the given objects; unchanged data stays as it is,
// changed data is swapped in atomically (volumes.Setup is idempotent).
func (sb *sandbox) RefreshVolumes(paths store.PodPaths, plan *podspec.Plan, cms map[string]*corev1.ConfigMap, secrets map[string]*corev1.Secret) error {
	// The same options as SetupSandbox's: the tmpfs volumes live under the
	// run directory, and a refresh must rewrite those, not new ones under --root.
	_, _, err := volumes.Setup(plan.Pod, volumes.Options{
		PodDir:                paths.Dir,
		MemoryDir:             paths.RunDir,
		Objects:               volumes.Objects{ConfigMaps: cms, Secrets: secrets},
		Fields:                fieldResolver{plan: plan, rt: sb.runtimeInfo()},
		NodeAllocatableMemory: sb.allocatable.Memory().Value(),
		ClaimPath:             sb.claimPath,
		UserNSBase:            int64(sb.usernsBase),
		Refresh:               true,
	})
	return err
}

// ServiceEnv, when set, returns the service environment variables of a pod's
// containers (services.EnvVars over the stored Services of its namespace). cmd
// sets it, so that runtime does not import services.
var ServiceEnv func(l store.Layout, pod *corev1.Pod) map[string]string
