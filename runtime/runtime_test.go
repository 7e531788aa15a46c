package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/user"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/podspec"
)

func TestCapabilities(t *testing.T) {
	all := allCapabilities()
	for _, tc := range []struct {
		name       string
		privileged bool
		add, drop  []string
		has, lacks []string
		count      int
	}{
		{name: "defaults", has: []string{"CAP_CHOWN", "CAP_KILL"}, lacks: []string{"CAP_SYS_ADMIN", "CAP_NET_ADMIN"}, count: len(defaultCapabilities)},
		{name: "add without prefix", add: []string{"NET_ADMIN"}, has: []string{"CAP_NET_ADMIN", "CAP_CHOWN"}, count: len(defaultCapabilities) + 1},
		{name: "drop", drop: []string{"CHOWN", "CAP_KILL"}, lacks: []string{"CAP_CHOWN", "CAP_KILL"}, count: len(defaultCapabilities) - 2},
		{name: "drop all add one", drop: []string{"ALL"}, add: []string{"NET_BIND_SERVICE"}, has: []string{"CAP_NET_BIND_SERVICE"}, count: 1},
		{name: "add all", add: []string{"ALL"}, count: len(all)},
		{name: "add all drop one", add: []string{"ALL"}, drop: []string{"SYS_ADMIN"}, lacks: []string{"CAP_SYS_ADMIN"}, count: len(all) - 1},
		{name: "privileged", privileged: true, drop: []string{"ALL"}, has: []string{"CAP_SYS_ADMIN"}, count: len(all)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := capabilities(tc.privileged, tc.add, tc.drop)
			if len(got) != tc.count {
				t.Errorf("%d capabilities, want %d: %v", len(got), tc.count, got)
			}
			for _, c := range tc.has {
				if !slices.Contains(got, c) {
					t.Errorf("missing %s", c)
				}
			}
			for _, c := range tc.lacks {
				if slices.Contains(got, c) {
					t.Errorf("has %s", c)
				}
			}
		})
	}
}

func TestContainerSpec(t *testing.T) {
	adj := 500
	for _, tc := range []struct {
		name  string
		cfg   containerConfig
		check func(t *testing.T, s *specs.Spec)
	}{
		{"masked paths and read-only sysfs", containerConfig{Hostname: "web"}, func(t *testing.T, s *specs.Spec) {
			if !slices.Contains(s.Linux.MaskedPaths, "/proc/kcore") || !slices.Contains(s.Linux.ReadonlyPaths, "/proc/sys") {
				t.Errorf("masked %v readonly %v", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
			}
			if !slices.Contains(s.Mounts[4].Options, "ro") {
				t.Errorf("sysfs %v", s.Mounts[4])
			}
			if s.Hostname != "web" || !hasNS(s, specs.UTSNamespace) {
				t.Error("no own UTS namespace with a hostname")
			}
		}},
		{"privileged", containerConfig{Privileged: true}, func(t *testing.T, s *specs.Spec) {
			if len(s.Linux.MaskedPaths) != 0 || !slices.Contains(s.Mounts[4].Options, "rw") {
				t.Errorf("privileged: masked %v sysfs %v", s.Linux.MaskedPaths, s.Mounts[4])
			}
		}},
		{"host namespaces", containerConfig{HostNetwork: true, HostIPC: true, HostPID: true}, func(t *testing.T, s *specs.Spec) {
			for _, n := range []specs.LinuxNamespaceType{specs.NetworkNamespace, specs.IPCNamespace, specs.PIDNamespace, specs.UTSNamespace} {
				if hasNS(s, n) {
					t.Errorf("joins a new %s namespace", n)
				}
			}
			if !hasNS(s, specs.MountNamespace) {
				t.Error("no mount namespace")
			}
		}},
		{"pod namespaces", containerConfig{NetNS: "/run/netns/x", IPCNS: "/ipc", Hostname: "h"}, func(t *testing.T, s *specs.Spec) {
			for _, n := range s.Linux.Namespaces {
				if n.Type == specs.NetworkNamespace && n.Path != "/run/netns/x" || n.Type == specs.IPCNamespace && n.Path != "/ipc" {
					t.Errorf("namespace %+v", n)
				}
			}
		}},
		{"user and process", containerConfig{User: user.ExecUser{Uid: 1000, Gid: 2000, Sgids: []int{3000}}, OOMScoreAdj: &adj, NoNewPrivileges: true, Args: []string{"sh"}}, func(t *testing.T, s *specs.Spec) {
			u := s.Process.User
			if u.UID != 1000 || u.GID != 2000 || !slices.Equal(u.AdditionalGids, []uint32{3000}) {
				t.Errorf("user %+v", u)
			}
			if *s.Process.OOMScoreAdj != 500 || !s.Process.NoNewPrivileges {
				t.Errorf("process %+v", s.Process)
			}
		}},
		{"extra mounts after the defaults", containerConfig{Mounts: []specs.Mount{{Destination: "/data"}}}, func(t *testing.T, s *specs.Spec) {
			if s.Mounts[len(s.Mounts)-1].Destination != "/data" {
				t.Errorf("mounts %v", s.Mounts)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, tc.cfg.spec()) })
	}
}

func hasNS(s *specs.Spec, t specs.LinuxNamespaceType) bool {
	for _, n := range s.Linux.Namespaces {
		if n.Type == t {
			return true
		}
	}
	return false
}

func TestOOMScoreAdj(t *testing.T) {
	capacity := hostMemory()
	if capacity <= 0 {
		t.Skip("no /proc/meminfo")
	}
	mem := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}}
	}
	always := corev1.ContainerRestartPolicyAlways
	app := corev1.Container{Name: "app", Resources: mem("1Mi")}
	big := corev1.Container{Name: "big", Resources: mem("1Ti")}
	half := corev1.Container{Name: "half", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(capacity/2, resource.BinarySI)}}}
	sidecar := corev1.Container{Name: "side", RestartPolicy: &always}
	for _, tc := range []struct {
		name string
		qos  corev1.PodQOSClass
		apps []corev1.Container
		c    corev1.Container
		want int
	}{
		{"guaranteed", corev1.PodQOSGuaranteed, nil, app, -997},
		{"best effort", corev1.PodQOSBestEffort, nil, app, 1000},
		{"burstable tiny request", corev1.PodQOSBurstable, nil, app, 999},
		{"burstable half the host", corev1.PodQOSBurstable, nil, half, 500},
		{"burstable huge request", corev1.PodQOSBurstable, nil, big, 3},
		{"burstable no request", corev1.PodQOSBurstable, nil, corev1.Container{}, 999},
		{"sidecar as its app", corev1.PodQOSBurstable, []corev1.Container{big}, sidecar, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := &podspec.Plan{QOS: tc.qos, Pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.apps}}}
			if got := oomScoreAdj(plan, &tc.c); got != tc.want {
				t.Errorf("oomScoreAdj = %d, want %d", got, tc.want)
			}
		})
	}
	if restrictOOMScoreAdj(-1000) < ownOOMScoreAdjFloor() {
		t.Error("restrictOOMScoreAdj went below the floor")
	}
}

func TestResolveUser(t *testing.T) {
	rootfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(rootfs, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n"), 0o644)
	_ = os.WriteFile(filepath.Join(rootfs, "etc/group"), []byte("root:x:0:\napp:x:1000:\nextra:x:1500:app\n"), 0o644)
	i64 := func(v int64) *int64 { return &v }
	yes := true
	strict := corev1.SupplementalGroupsPolicyStrict
	for _, tc := range []struct {
		name      string
		imageUser string
		pod       *corev1.PodSecurityContext
		ctr       *corev1.SecurityContext
		uid, gid  int
		sgids     []int
		err       string
	}{
		{name: "image default is root", uid: 0, gid: 0, sgids: []int{0}},
		{name: "image user by name", imageUser: "app", uid: 1000, gid: 1000, sgids: []int{1000, 1500}},
		{name: "Strict leaves the image's groups out", imageUser: "app", pod: &corev1.PodSecurityContext{SupplementalGroupsPolicy: &strict, SupplementalGroups: []int64{7}}, uid: 1000, gid: 1000, sgids: []int{1000, 7}},
		{name: "runAsUser over the image", imageUser: "app", ctr: &corev1.SecurityContext{RunAsUser: i64(42)}, uid: 42, gid: 0, sgids: []int{0}},
		{name: "container over pod", pod: &corev1.PodSecurityContext{RunAsUser: i64(7), RunAsGroup: i64(8)}, ctr: &corev1.SecurityContext{RunAsUser: i64(9)}, uid: 9, gid: 8, sgids: []int{8}},
		{name: "groups", pod: &corev1.PodSecurityContext{RunAsUser: i64(5), SupplementalGroups: []int64{100}, FSGroup: i64(200)}, uid: 5, gid: 0, sgids: []int{0, 200, 100}},
		{name: "non-root image root", pod: &corev1.PodSecurityContext{RunAsNonRoot: &yes}, err: "image will run as root"},
		{name: "non-root runAsUser 0", ctr: &corev1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: i64(0)}, err: "runAsUser breaks non-root policy"},
		{name: "unknown name", imageUser: "nobody-here", err: "resolving user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &containerConfig{}
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: tc.pod}}
			err := resolveUser(cfg, &corev1.Container{SecurityContext: tc.ctr}, pod, tc.imageUser, rootfs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.User.Uid != tc.uid || cfg.User.Gid != tc.gid || !slices.Equal(cfg.User.Sgids, tc.sgids) {
				t.Errorf("user %d:%d %v, want %d:%d %v", cfg.User.Uid, cfg.User.Gid, cfg.User.Sgids, tc.uid, tc.gid, tc.sgids)
			}
		})
	}
}
