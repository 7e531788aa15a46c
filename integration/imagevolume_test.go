package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/testregistry"
	"github.com/podrun/podrun/tools/mkimage/archive"
)

// Image volumes (spec.volumes[*].image), the scenarios of Kubernetes'
// test/e2e/common/node/image_volume.go and test/e2e_node/image_volume.go
// with the busybox test image as the volume's image.

// imageVolumeMounts lists the mounts podrun holds for the pod's image volumes.
func (e *env) imageVolumeMounts(t *testing.T, p *corev1.Pod) []string {
	t.Helper()
	dir := filepath.Join(e.runRoot, "pods", string(p.UID), "image-volumes")
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range mounts {
		out = append(out, m.Mountpoint)
	}
	return out
}

// An image volume mounted into an init container, a sidecar and an app
// container: the image's files, read-only whatever readOnly says, a subPath
// that is a directory of the image; one mount per pod and image, shared by
// the volumes and containers that use it; an image of two layers merged;
// the image kept from rmi while the pod exists; nothing left after delete.
func TestImageVolume(t *testing.T) {
	e := newEnv(t)
	base := imgDockerArchiveLayers(t, testImage)[0]
	kitten := imgWriteArchive(t, archive.DockerArchive, "podrun.test/kitten:1", imgBusyboxConfig,
		archive.Layer{Tar: base}, imgDirLayer(t, map[string]string{"data.json": `{"image": "kitten.jpg"}` + "\n"}))
	e.must("load", "-i", kitten)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: imgvol}
spec:
  initContainers:
  - name: init
    image: busybox:1.28
    command: ["sh", "-c", "grep -q root: /volume/etc/passwd && ! touch /volume/x 2>/dev/null && echo init-ok > /data/init"]
    volumeMounts:
    - {name: volume, mountPath: /volume}
    - {name: data, mountPath: /data}
  - name: sidecar
    image: busybox:1.28
    restartPolicy: Always
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: volume, mountPath: /volume, readOnly: true}
  containers:
  - name: test-container
    image: busybox:1.28
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: volume, mountPath: /volume}
    - {name: same, mountPath: /same}
    - {name: kitten, mountPath: /kitten}
    - {name: volume, mountPath: /etc-only, subPath: etc}
    - {name: data, mountPath: /data}
  volumes:
  - name: volume
    image: {reference: "busybox:1.28", pullPolicy: Never}
  - name: same
    image: {reference: "busybox:1.28"}
  - name: kitten
    image: {reference: "podrun.test/kitten:1", pullPolicy: IfNotPresent}
  - name: data
    emptyDir: {}
`)
	p := e.waitPhase("imgvol", corev1.PodRunning, 60*time.Second)
	e.waitFor("imgvol", 30*time.Second, "ready", func(p *corev1.Pod) bool {
		return containerState(p, "test-container").Ready
	})
	exec := func(c string, cmd ...string) result {
		return e.podrun(append([]string{"exec", "imgvol", "-c", c, "--"}, cmd...)...)
	}
	if r := exec("test-container", "cat", "/data/init"); r.code != 0 || r.stdout != "init-ok\n" {
		t.Errorf("the init container's checks: %s", r)
	}
	for _, path := range []string{"/volume/etc/passwd", "/same/etc/passwd", "/etc-only/passwd", "/kitten/etc/passwd"} {
		if r := exec("test-container", "cat", path); r.code != 0 || !strings.Contains(r.stdout, "root:") {
			t.Errorf("cat %s: %s", path, r)
		}
	}
	if r := exec("test-container", "cat", "/kitten/data.json"); r.code != 0 || !strings.Contains(r.stdout, "kitten.jpg") {
		t.Errorf("cat /kitten/data.json: %s", r)
	}
	if r := exec("sidecar", "ls", "/volume/bin/busybox"); r.code != 0 {
		t.Errorf("the sidecar's view of the volume: %s", r)
	}
	for _, path := range []string{"/volume/new", "/same/etc/new", "/etc-only/new", "/kitten/data.json"} {
		r := exec("test-container", "touch", path)
		if r.code == 0 || !strings.Contains(r.stderr, "Read-only file system") {
			t.Errorf("touch %s: %s; want a read-only file system", path, r)
		}
	}
	if r := exec("test-container", "rm", "/volume/etc/group"); r.code == 0 {
		t.Errorf("rm in the volume succeeded")
	}
	if r := exec("test-container", "grep", " /volume ", "/proc/mounts"); r.code != 0 || !strings.Contains(r.stdout, " ro,") {
		t.Errorf("/proc/mounts for /volume: %s; want a read-only mount", r)
	}
	// An ephemeral container mounts it too (the API forbids it only a subPath).
	e.must("patch", "pod", "imgvol", "--subresource", "ephemeralcontainers", "-p",
		`{"spec":{"ephemeralContainers":[{"name":"debugger","image":"busybox:1.28","terminationMessagePolicy":"File","command":["cat","/kitten/data.json"],"volumeMounts":[{"name":"kitten","mountPath":"/kitten"}]}]}}`)
	e.waitFor("imgvol", 30*time.Second, "debugger ended", func(p *corev1.Pod) bool {
		return containerState(p, "debugger").State.Terminated != nil
	})
	if r := e.must("logs", "imgvol", "-c", "debugger"); !strings.Contains(r.stdout, "kitten.jpg") {
		t.Errorf("the ephemeral container's view of the volume: %s", r)
	}
	// One mount per image, whichever volumes and containers use it.
	if got := e.imageVolumeMounts(t, p); len(got) != 2 {
		t.Errorf("image volume mounts on the host: %q, want one per image", got)
	}
	// The image manager's events for an image volume are the pod's.
	if ev := e.imgEvents("imgvol", "Pulled"); !slices.ContainsFunc(ev, func(l string) bool {
		return strings.Contains(l, `Container image "busybox:1.28" already present on machine`)
	}) {
		t.Errorf("no Pulled event for the volume's image: %q", ev)
	}
	// describe shows the volumes as kubectl's printImageVolumeSource.
	if out := e.must("describe", "pod", "imgvol").stdout; !strings.Contains(out, "Image (a container image or OCI artifact)") ||
		!strings.Contains(out, "podrun.test/kitten:1") || !strings.Contains(out, "IfNotPresent") {
		t.Errorf("describe lacks the image volumes:\n%s", out)
	}
	e.mustFail(failure{args: []string{"rmi", "podrun.test/kitten:1"}, code: 1, msg: "in use"})
	e.must("image", "prune")
	if _, ok := e.imgFind("podrun.test/kitten", "1"); !ok {
		t.Error("image prune removed the image of a volume in use")
	}

	e.must("delete", "pod", "imgvol", "--grace-period", "1")
	if got := e.imageVolumeMounts(t, p); len(got) != 0 {
		t.Errorf("image volume mounts after delete: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.runRoot, "pods", string(p.UID))); !os.IsNotExist(err) {
		t.Errorf("the pod's run directory after delete: %v", err)
	}
	e.must("rmi", "podrun.test/kitten:1")
}

// A subPath that the image does not have fails the container's creation
// (CreateContainerError, the runtime's ImageVolumeMountFailed), as the
// e2e_node test "should fail if subPath in volume is not existing"; a file
// is refused the same way; the pod's other containers run.
func TestImageVolumeMissingSubPath(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: subpath}
spec:
  containers:
  - name: test-container
    image: busybox:1.28
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: volume, mountPath: /volume, subPath: not-existing}
  - name: file
    image: busybox:1.28
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: volume, mountPath: /volume, subPath: etc/passwd}
  - name: other
    image: busybox:1.28
    command: ["sleep", "3600"]
  volumes:
  - name: volume
    image: {reference: "busybox:1.28", pullPolicy: IfNotPresent}
`)
	p := e.waitFor("subpath", 60*time.Second, "failing to create test-container", func(p *corev1.Pod) bool {
		w := containerState(p, "test-container").State.Waiting
		f := containerState(p, "file").State.Waiting
		return w != nil && w.Reason == "CreateContainerError" && f != nil && f.Reason == "CreateContainerError" &&
			containerState(p, "other").State.Running != nil
	})
	w := containerState(p, "test-container").State.Waiting
	if !strings.HasPrefix(w.Message, "ImageVolumeMountFailed: ") || !strings.Contains(w.Message, `"not-existing"`) || strings.Contains(w.Message, e.runRoot) {
		t.Errorf("waiting message %q: want the runtime's ImageVolumeMountFailed naming the subPath, and no host path", w.Message)
	}
	if f := containerState(p, "file").State.Waiting; !strings.Contains(f.Message, "only directory subpath is supported") {
		t.Errorf("a file as subPath: %q", f.Message)
	}
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
	if ev := e.imgEvents("subpath", "Failed"); !slices.ContainsFunc(ev, func(l string) bool { return strings.Contains(l, "Error: ImageVolumeMountFailed") }) {
		t.Errorf("no Failed event with the runtime's error: %q", ev)
	}
	if st := containerState(p, "test-container"); st.RestartCount != 0 || st.LastTerminationState.Terminated != nil {
		t.Errorf("a failed creation counted as a run: %+v", st)
	}
}

// A volume whose image is absent with pullPolicy Never holds the containers
// that mount it in ErrImageNeverPull ("should fail if image volume is not
// existing") and none of the others ("should succeed if image volume is not
// existing but unused"); once the image is loaded they start.
func TestImageVolumeNeverPull(t *testing.T) {
	e := newEnv(t)
	r := e.must(imgFastBackoff("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: never}
spec:
  containers:
  - name: test-container
    image: busybox:1.28
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: volume, mountPath: /volume}
  - name: unused
    image: busybox:1.28
    command: ["sleep", "3600"]
  volumes:
  - name: volume
    image: {reference: "example.com/missing:1.0", pullPolicy: Never}
`))...)
	if want := `Warning: pod "never": spec.volumes[0].image.reference: image "example.com/missing:1.0" is not in the local store and pullPolicy is Never`; !strings.Contains(r.stderr, want) {
		t.Errorf("apply's stderr %q lacks %q", r.stderr, want)
	}
	p := e.waitFor("never", 60*time.Second, "waiting in ErrImageNeverPull", func(p *corev1.Pod) bool {
		w := containerState(p, "test-container").State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull" && containerState(p, "unused").State.Running != nil
	})
	want := `Container image "example.com/missing:1.0" is not present with pull policy of Never`
	if w := containerState(p, "test-container").State.Waiting; w.Message != want {
		t.Errorf("waiting message %q, want %q", w.Message, want)
	}
	if ev := e.imgEvents("never", "ErrImageNeverPull"); !slices.ContainsFunc(ev, func(l string) bool { return strings.Contains(l, want) }) {
		t.Errorf("no ErrImageNeverPull event: %q", ev)
	}
	if ev := e.imgEvents("never", "Failed"); !slices.ContainsFunc(ev, func(l string) bool { return strings.Contains(l, "Error: ErrImageNeverPull") }) {
		t.Errorf("no Failed event for the container: %q", ev)
	}
	if r := e.must("exec", "never", "-c", "unused", "--", "ls", "/"); strings.Contains(r.stdout, "volume") {
		t.Errorf("the unused volume is in the container: %s", r.stdout)
	}

	e.must("load", "-i", testImage, "--tag", "example.com/missing:1.0")
	p = e.waitFor("never", 60*time.Second, "running once the image is loaded", func(p *corev1.Pod) bool {
		return containerState(p, "test-container").State.Running != nil
	})
	if r := e.must("exec", "never", "-c", "test-container", "--", "cat", "/volume/etc/passwd"); !strings.Contains(r.stdout, "root:") {
		t.Errorf("cat /volume/etc/passwd: %s", r)
	}
	if st := containerState(p, "test-container"); st.RestartCount != 0 {
		t.Errorf("waiting for the image counted as restarts: %d", st.RestartCount)
	}
}

// Image volumes pulled from a registry: pullPolicy Always, an image of two
// layers (the overlay of lower directories), two volumes of one image ("should
// succeed with pod and multiple volumes"); a reference the registry does not
// have waits in ErrImagePull, then ImagePullBackOff with the volume image's
// backoff message, and starts once it is pushed.
func TestImageVolumeFromRegistry(t *testing.T) {
	e := newEnv(t)
	reg := testregistry.Start(t, false)
	base := imgDockerArchiveLayers(t, testImage)[0]
	kitten := imgWriteArchive(t, archive.DockerArchive, "", imgBusyboxConfig,
		archive.Layer{Tar: base}, imgDirLayer(t, map[string]string{"data.json": `{"image": "kitten.jpg"}` + "\n"}))
	reg.Push(t, archive.DockerArchive, kitten, "kitten:1.0")
	ref := reg.Addr + "/kitten:1.0"
	missing := reg.Addr + "/late:1.0"
	e.must(imgFastBackoff("apply", e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: pulled}
spec:
  containers:
  - name: test-container
    image: busybox:1.28
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: volume-0, mountPath: /volume-0}
    - {name: volume-1, mountPath: /volume-1}
  - name: late
    image: busybox:1.28
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: late, mountPath: /volume}
  volumes:
  - name: volume-0
    image: {reference: %q, pullPolicy: Always}
  - name: volume-1
    image: {reference: %q}
  - name: late
    image: {reference: %q}
`, ref, ref, missing)))...)
	p := e.waitFor("pulled", 60*time.Second, "running test-container", func(p *corev1.Pod) bool {
		return containerState(p, "test-container").State.Running != nil
	})
	for _, dir := range []string{"/volume-0", "/volume-1"} {
		if r := e.must("exec", "pulled", "-c", "test-container", "--", "cat", dir+"/data.json"); !strings.Contains(r.stdout, "kitten.jpg") {
			t.Errorf("cat %s/data.json: %s", dir, r)
		}
		if r := e.must("exec", "pulled", "-c", "test-container", "--", "cat", dir+"/etc/passwd"); !strings.Contains(r.stdout, "root:") {
			t.Errorf("cat %s/etc/passwd: %s", dir, r)
		}
	}
	if r := e.podrun("exec", "pulled", "-c", "test-container", "--", "touch", "/volume-0/data.json"); r.code == 0 {
		t.Errorf("touch in the volume succeeded")
	}
	if ev := e.imgEvents("pulled", "Pulling"); !slices.ContainsFunc(ev, func(l string) bool { return strings.Contains(l, fmt.Sprintf("Pulling image %q", ref)) }) {
		t.Errorf("no Pulling event for the volume's image: %q", ev)
	}

	// The missing reference: ErrImagePull, then ImagePullBackOff.
	seen := map[string]string{}
	for deadline := time.Now().Add(45 * time.Second); len(seen) < 2; time.Sleep(100 * time.Millisecond) {
		if w := containerState(e.pod("pulled"), "late").State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
			seen[w.Reason] = w.Message
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting reasons of late: %v; want ErrImagePull and ImagePullBackOff", seen)
		}
	}
	if !strings.Contains(seen["ErrImagePull"], "manifest unknown") {
		t.Errorf("ErrImagePull message %q lacks the registry's \"manifest unknown\"", seen["ErrImagePull"])
	}
	if want := fmt.Sprintf("Back-off pulling image %q", missing); seen["ImagePullBackOff"] != want {
		t.Errorf("ImagePullBackOff message %q, want %q", seen["ImagePullBackOff"], want)
	}
	if ev := e.imgEvents("pulled", "BackOff"); !slices.ContainsFunc(ev, func(l string) bool { return strings.Contains(l, missing) }) {
		t.Errorf("no BackOff event for the volume's image: %q", ev)
	}
	if st := containerState(e.pod("pulled"), "test-container"); st.State.Running == nil || st.RestartCount != 0 {
		t.Errorf("test-container %+v, want running on", st)
	}

	reg.Push(t, archive.DockerArchive, kitten, "late:1.0")
	e.waitFor("pulled", 60*time.Second, "running late", func(p *corev1.Pod) bool {
		return containerState(p, "late").State.Running != nil
	})
	if r := e.must("exec", "pulled", "-c", "late", "--", "cat", "/volume/data.json"); !strings.Contains(r.stdout, "kitten.jpg") {
		t.Errorf("cat /volume/data.json: %s", r)
	}
	// late:1.0 is kitten:1.0 under another name: one image, one mount.
	if got := e.imageVolumeMounts(t, p); len(got) != 1 {
		t.Errorf("image volume mounts: %q, want one per image", got)
	}
}

// With hostUsers: false the image volume's files are root's inside the
// pod's user namespace, as its image's are (idmapped layers), for an image
// of one layer (a bind) and of two (an overlay).
func TestImageVolumeUserNamespace(t *testing.T) {
	e := newEnv(t)
	// runc's init reaches the rootfs from inside the user namespace
	// (TestUserNamespaces).
	if err := os.Chmod(filepath.Dir(filepath.Dir(e.runRoot)), 0o711); err != nil {
		t.Fatal(err)
	}
	base := imgDockerArchiveLayers(t, testImage)[0]
	kitten := imgWriteArchive(t, archive.DockerArchive, "podrun.test/kitten:1", imgBusyboxConfig,
		archive.Layer{Tar: base}, imgDirLayer(t, map[string]string{"data.json": `{"image": "kitten.jpg"}` + "\n"}))
	e.must("load", "-i", kitten)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: userns}
spec:
  hostUsers: false
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command: ["sh", "-c", "stat -c '%u:%g' /volume/etc/passwd /etc-only/passwd /kitten/data.json && cat /proc/self/uid_map"]
    volumeMounts:
    - {name: volume, mountPath: /volume}
    - {name: volume, mountPath: /etc-only, subPath: etc}
    - {name: kitten, mountPath: /kitten}
  volumes:
  - name: volume
    image: {reference: "busybox:1.28", pullPolicy: Never}
  - name: kitten
    image: {reference: "podrun.test/kitten:1", pullPolicy: Never}
`)
	p := e.waitFor("userns", 60*time.Second, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	out := e.must("logs", "userns", "-c", "c").stdout
	if p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s: %s", p.Status.Phase, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || lines[0] != "0:0" || lines[1] != "0:0" || lines[2] != "0:0" || strings.Fields(lines[3])[1] == "0" {
		t.Errorf("owners and uid_map in the pod:\n%s\nwant 0:0 three times, in a user namespace not at host ID 0", out)
	}
}

// A pod whose supervisor crashed with its image volume mounted: delete
// releases the mount with the rest of the sandbox.
func TestImageVolumeDeleteAfterCrash(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: crashed}
spec:
  containers:
  - name: app
    image: busybox:1.28
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: volume, mountPath: /volume}
  volumes:
  - name: volume
    image: {reference: "busybox:1.28", pullPolicy: Never}
`)
	p := e.waitFor("crashed", 60*time.Second, "running app", func(p *corev1.Pod) bool {
		return containerState(p, "app").State.Running != nil
	})
	if got := e.imageVolumeMounts(t, p); len(got) != 1 {
		t.Fatalf("image volume mounts: %q, want one", got)
	}
	e.crashSupervisor(string(p.UID))
	e.must("delete", "pod", "crashed", "--grace-period", "1")
	if got := e.imageVolumeMounts(t, p); len(got) != 0 {
		t.Errorf("image volume mounts after delete: %q", got)
	}
	if left := e.leftovers(); len(left) != 0 {
		t.Errorf("leftovers after delete: %q", left)
	}
}

// Two pods with a volume of the same image ("should succeed with multiple
// pods and same image on the same node"): each has its own mount, and the
// second still reads its volume once the first is deleted.
func TestImageVolumeTwoPods(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"test-pod-0", "test-pod-1"} {
		e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - name: test-container
    image: busybox:1.28
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: volume, mountPath: /volume}
  volumes:
  - name: volume
    image: {reference: "busybox:1.28"}
`, name))
	}
	var pods []*corev1.Pod
	for _, name := range []string{"test-pod-0", "test-pod-1"} {
		pods = append(pods, e.waitFor(name, 60*time.Second, "running", func(p *corev1.Pod) bool {
			return containerState(p, "test-container").State.Running != nil
		}))
		if r := e.must("exec", name, "--", "cat", "/volume/etc/passwd"); !strings.Contains(r.stdout, "root:") {
			t.Errorf("%s: cat /volume/etc/passwd: %s", name, r)
		}
	}
	for _, p := range pods {
		if got := e.imageVolumeMounts(t, p); len(got) != 1 {
			t.Errorf("%s: image volume mounts %q, want its own one", p.Name, got)
		}
	}
	e.must("delete", "pod", "test-pod-0", "--grace-period", "1")
	if got := e.imageVolumeMounts(t, pods[0]); len(got) != 0 {
		t.Errorf("test-pod-0's mounts after its delete: %q", got)
	}
	if r := e.must("exec", "test-pod-1", "--", "cat", "/volume/etc/passwd"); !strings.Contains(r.stdout, "root:") {
		t.Errorf("test-pod-1 after test-pod-0 went: %s", r)
	}
}
