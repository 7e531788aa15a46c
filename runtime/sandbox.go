package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/cgroups"
	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/internal/crashpoint"
	"github.com/podrun/podrun/network"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/volumes"
)

// sandbox is what a pod's containers share: network, IPC and UTS namespaces,
// /dev/shm, the /etc files, the pod cgroup and the volumes.
type sandbox struct {
	net *network.Result
	// netPending links the network namespace to the bridge (ConnectNetwork).
	netPending   *network.Pending
	hostNetwork  bool
	hostIPC      bool
	hostname     string
	ipcNS, utsNS string
	// pidNS is the shared PID namespace of a pod with shareProcessNamespace.
	pidNS        string
	shm          string
	etcHosts     string
	resolvConf   string
	hostnameFile string
	cgroup       *cgroups.Pod
	volumes      *volumes.Set
	// allocatable is the node's allocatable resources (nodeAllocatable).
	allocatable corev1.ResourceList
	// pidsLimit is the pod cgroup's pids limit (--pids-limit), kept for a resize.
	pidsLimit int64
	// claimPath resolves persistentVolumeClaim volumes (ClaimPath).
	claimPath func(string) (string, error)
	// usernsBase, for a pod with hostUsers: false, is the first of its
	// 65536 host IDs (allocateUserNS), usernsFile a user namespace with that
	// mapping for the idmapped mounts of its image layers; 0 and nil for
	// other pods.
	usernsBase uint32
	usernsFile *os.File
	// mqueue is the pod IPC namespace's mqueue filesystem, mounted for a
	// pod with hostUsers: false (pinNamespaces).
	mqueue string
}

func networkConfig(l store.Layout) network.Config {
	return network.Config{RunRoot: l.RunRoot, StateDir: l.NetworkDir(), Bridge: l.Bridge, Subnet: l.Subnet}
}

// PodNetNS is the network namespace of the pod uid of the layout l (its
// record's), for a command that works in it (port-forward).
func PodNetNS(l store.Layout, uid string) string {
	return network.PodNetNSPath(networkConfig(l), uid)
}

// hostPorts lists the ports the pod publishes on the host.
func hostPorts(pod *corev1.Pod) []network.PortMapping {
	var out []network.PortMapping
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, p := range c.Ports {
				if p.HostPort > 0 {
					out = append(out, network.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: string(p.Protocol), HostIP: p.HostIP})
				}
			}
		}
	}
	return out
}

// fieldResolver answers downward API references for volumes.
type fieldResolver struct {
	plan *podspec.Plan
	rt   podspec.RuntimeInfo
}

func (f fieldResolver) FieldRef(path string) (string, error) {
	return podspec.FieldRefValue(f.plan.Pod, path, f.rt)
}

func (f fieldResolver) ResourceFieldRef(container string, ref *corev1.ResourceFieldSelector) (string, error) {
	for _, list := range [][]corev1.Container{f.plan.Pod.Spec.Containers, f.plan.Pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == container {
				return podspec.ResourceFieldRefValue(f.plan.Pod, &list[i], ref, f.rt)
			}
		}
	}
	return "", fmt.Errorf("container %q not found", container)
}

// setupSandbox builds everything a pod's containers share. On error it
// releases what it made.
func setupSandbox(ctx context.Context, l store.Layout, paths store.PodPaths, plan *podspec.Plan, pidsLimit int64, notes func(string)) (sb *sandbox, err error) {
	pod := plan.Pod
	uid := string(pod.UID)
	defer func() {
		if err != nil {
			_ = teardownSandbox(l, paths, uid)
		}
	}()
	for _, d := range []string{paths.RunDir, paths.EtcDir(), paths.StateRoot()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	sb = &sandbox{hostNetwork: pod.Spec.HostNetwork, hostIPC: pod.Spec.HostIPC, allocatable: nodeAllocatable(l.Root), pidsLimit: pidsLimit}
	if sb.hostname, err = network.Hostname(pod); err != nil {
		// Unwrapped: the kubelet's FailedCreatePodSandBox event carries
		// GetNodenameForKernel's error as it is (generatePodSandboxConfig).
		return nil, err
	}

	// A pod with hostUsers: false gets its own block of host IDs, as the
	// kubelet's userns manager allocates one before the sandbox.
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		if err := reachableRootfs(l, paths); err != nil {
			return nil, err
		}
		if sb.usernsBase, err = allocateUserNS(l, paths, uid); err != nil {
			return nil, fmt.Errorf("allocating the pod's user namespace: %w", err)
		}
		if sb.usernsFile, err = openUserNS(sb.usernsBase); err != nil {
			return nil, err
		}
	}

	// From the pod as it is now, not the plan's values: a resize may have
	// come before the sandbox.
	sb.cgroup, err = cgroups.CreatePod(l.CgroupParent, uid, sb.podCgroupResources(pod), l.CgroupDriver)
	if err != nil {
		return nil, fmt.Errorf("creating the pod cgroup: %w", err)
	}

	// The volumes before the network, as the kubelet's SyncPod waits for
	// them (WaitForAttachAndMount) before it creates the sandbox: a volume
	// that cannot be set up yet (FailedMount, retried) costs no network.
	// Their downward API fields are metadata only (validation), no address.
	var volNotes []string
	sb.claimPath = ClaimPath(l, pod.Namespace)
	sb.volumes, volNotes, err = volumes.Setup(pod, volumes.Options{
		PodDir:    paths.Dir,
		MemoryDir: paths.RunDir, // Secret values stay in memory, off --root
		Objects:   volumes.Objects{ConfigMaps: plan.ConfigMaps, Secrets: plan.Secrets},
		Fields:    fieldResolver{plan: plan, rt: sb.runtimeInfo()},
		// emptyDir medium Memory is sized from node allocatable memory (calculateEmptyDirMemorySize).
		NodeAllocatableMemory: sb.allocatable.Memory().Value(),
		ClaimPath:             sb.claimPath,
		UserNSBase:            int64(sb.usernsBase),
	})
	if err != nil {
		return nil, fmt.Errorf("setting up volumes: %w", err)
	}
	for _, n := range volNotes {
		notes(n)
	}

	// The namespace and address now, the veth and rules in ConnectNetwork:
	// the containers created ahead need only the namespace.
	sb.net, sb.netPending, err = network.Prepare(ctx, networkConfig(l), network.Request{
		PodID: uid, Namespace: pod.Namespace, Name: pod.Name,
		HostNetwork: pod.Spec.HostNetwork, Ports: hostPorts(pod),
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the pod network: %w", err)
	}
	for _, n := range sb.net.Notes {
		notes(n)
	}
	crashpoint.Hit("sandbox:network")

	nsDir := paths.NSDir()
	if err := pinNamespaces(nsDir, sb.hostname, !pod.Spec.HostIPC, !pod.Spec.HostNetwork, sb.usernsBase != 0); err != nil {
		return nil, fmt.Errorf("creating the pod's IPC and UTS namespaces: %w", err)
	}
	if !pod.Spec.HostIPC {
		sb.ipcNS = filepath.Join(nsDir, "ipc")
		sb.shm = filepath.Join(nsDir, "shm")
		if sb.usernsBase != 0 {
			sb.mqueue = filepath.Join(nsDir, "mqueue")
		}
		if err := mountShm(sb.shm); err != nil {
			return nil, err
		}
	}
	if !pod.Spec.HostNetwork {
		sb.utsNS = filepath.Join(nsDir, "uts")
	}
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace && !pod.Spec.HostPID {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		pause, err := startPause(exe, sb.cgroup.AddSandboxProcess)
		if err != nil {
			return nil, err
		}
		sb.pidNS = fmt.Sprintf("/proc/%d/ns/pid", pause.Process.Pid)
	}

	hostsOpts, err := network.PodHostsOptions(pod, sb.net.PodIPs)
	if err != nil {
		return nil, fmt.Errorf("building /etc/hosts: %w", err)
	}
	hosts, err := network.HostsFile(hostsOpts)
	if err != nil {
		return nil, fmt.Errorf("building /etc/hosts: %w", err)
	}
	cluster := network.ClusterDNS{ResolvConf: l.ResolvConf}
	if l.ClusterDNS != "" {
		cluster.Servers = []string{l.ClusterDNS}
	}
	resolv, err := network.ClusterResolvConf(pod, cluster)
	if err != nil {
		return nil, fmt.Errorf("building /etc/resolv.conf: %w", err)
	}
	etc := paths.EtcDir()
	sb.etcHosts, sb.resolvConf, sb.hostnameFile = filepath.Join(etc, "hosts"), filepath.Join(etc, "resolv.conf"), filepath.Join(etc, "hostname")
	for path, data := range map[string][]byte{sb.etcHosts: hosts, sb.resolvConf: resolv, sb.hostnameFile: []byte(sb.hostname + "\n")} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
	}

	return sb, nil
}

// ConnectNetwork finishes the pod's network (network.Pending.Connect): the
// sandbox is ready once it returns. The supervisor creates the first
// containers ahead while it runs. On error the network is gone; the rest of
// the sandbox is for TeardownSandbox.
func (sb *sandbox) ConnectNetwork(ctx context.Context) error {
	return sb.netPending.Connect(ctx)
}

func (sb *sandbox) runtimeInfo() podspec.RuntimeInfo {
	host, _ := os.Hostname()
	rt := podspec.RuntimeInfo{NodeName: host, Hostname: sb.hostname, NodeAllocatable: sb.allocatable}
	if sb.net != nil { // not yet while the volumes are set up
		rt.PodIP, rt.PodIPs, rt.HostIP = sb.net.PodIP, sb.net.PodIPs, sb.net.HostIP
	}
	if sb.volumes != nil { // fileKeyRef's env files
		rt.VolumePaths = map[string]string{}
		for _, v := range sb.volumes.Volumes() {
			rt.VolumePaths[v.Name] = v.Path
		}
	}
	return rt
}

// nodeAllocatable is what a kubelet with its default settings reports as the
// node's allocatable resources: capacity less the reservations
// (nodestatus.MachineInfo, GetNodeAllocatableReservation), of which the
// defaults have only the hard eviction thresholds memory.available<100Mi
// and nodefs.available<10%. So: every CPU, the memory less 100Mi, and the
// filesystem of --root (the kubelet's root directory) less 10%. The downward
// API gives these for a container's missing limits (kubelet_resources.go
// defaultPodLimitsForDownwardAPI).
func nodeAllocatable(root string) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err == nil {
		mem := int64(si.Totalram)*int64(si.Unit) - 100<<20
		out[corev1.ResourceMemory] = *resource.NewQuantity(max(mem, 0), resource.BinarySI)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err == nil {
		capacity := int64(st.Blocks) * int64(st.Bsize)
		out[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(capacity-int64(float64(capacity)*0.1), resource.BinarySI)
	}
	return out
}

// teardownSandbox releases everything a pod holds on the host: containers and
// their processes, rootfs mounts, cgroups, volumes, network, namespaces. It
// reads only what is on disk, so it works after a crash, and it is idempotent.
// ClaimPath resolves the pod's persistentVolumeClaim volumes to their
// claims' directories in the store; the supervisor has checked that the
// claims exist before it builds the sandbox (see supervisor.claimsProblem).
func ClaimPath(l store.Layout, namespace string) func(string) (string, error) {
	return func(name string) (string, error) {
		if _, err := l.Claim(namespace, name); err != nil {
			return "", err
		}
		return l.ClaimDir(namespace, name), nil
	}
}

func teardownSandbox(l store.Layout, paths store.PodPaths, uid string) error {
	var errs []error
	// Kill first, then make sure through the pod cgroup that no process is
	// left, then release the containers' state and mounts.
	killAllContainers(paths.StateRoot())
	crashpoint.Hit("teardown:killed")
	if err := cgroups.DestroyPod(l.CgroupParent, uid); err != nil {
		errs = append(errs, fmt.Errorf("removing the pod cgroup: %w", err))
	}
	if err := destroyAllContainers(paths.StateRoot()); err != nil {
		errs = append(errs, err)
	}
	rootfsDirs, _ := filepath.Glob(filepath.Join(paths.RunDir, "rootfs", "*"))
	for _, d := range rootfsDirs {
		if err := image.UnmountRootfs(d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unmountImageVolumes(paths); err != nil {
		errs = append(errs, err)
	}
	if err := volumes.Teardown(paths.Dir); err != nil {
		errs = append(errs, fmt.Errorf("removing volumes: %w", err))
	}
	if err := volumes.Teardown(paths.RunDir); err != nil {
		errs = append(errs, fmt.Errorf("removing volumes: %w", err))
	}
	if err := network.Teardown(networkConfig(l), uid); err != nil {
		errs = append(errs, fmt.Errorf("removing the pod network: %w", err))
	}
	if err := unpinNamespaces(paths.NSDir()); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
