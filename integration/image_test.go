package integration

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/testregistry"
	"github.com/podrun/podrun/tools/mkimage/archive"
)

// imgFastBackoff prepends short backoffs to args, so that image-pull retries come within
// seconds (the flags scale the image-pull backoff as well as the crash-loop one).
func imgFastBackoff(args ...string) []string {
	return append([]string{"--crashloop-backoff-initial", "1s", "--crashloop-backoff-max", "4s"}, args...)
}

// imgPodrunEnv runs podrun with this env's global flags and extra environment variables
// (which override the test process's own).
func (e *env) imgPodrunEnv(extraEnv []string, args ...string) result {
	e.t.Helper()
	cmd := exec.Command(podrunBin, e.args(args...)...)
	cmd.Env = append(os.Environ(), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("running podrun %v: %v", args, err)
	}
	return r
}

// imgCredEnv points every place containers/image looks for registry credentials at
// fresh temp dirs, so that no real user's file is read or written.
func imgCredEnv(t *testing.T) (home, runtimeDir string, env []string) {
	home, runtimeDir = t.TempDir(), t.TempDir()
	return home, runtimeDir, []string{
		"HOME=" + home,
		"XDG_RUNTIME_DIR=" + runtimeDir,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"DOCKER_CONFIG=",
		"REGISTRY_AUTH_FILE=",
	}
}

// imgDockerArchiveLayers returns the uncompressed layer tars of a docker-archive, bottom
// first.
func imgDockerArchiveLayers(t testing.TB, p string) [][]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	links := map[string]string{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := path.Clean(hdr.Name)
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			links[name] = path.Join(path.Dir(name), hdr.Linkname)
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[name] = data
		}
	}
	var mani []struct{ Layers []string }
	if err := json.Unmarshal(files["manifest.json"], &mani); err != nil || len(mani) != 1 {
		t.Fatalf("%s: manifest.json: %v (%d images)", p, err, len(mani))
	}
	var out [][]byte
	for _, l := range mani[0].Layers {
		l = path.Clean(l)
		if target, ok := links[l]; ok {
			l = target
		}
		data, ok := files[l]
		if !ok {
			t.Fatalf("%s: layer %s not in the archive", p, l)
		}
		out = append(out, data)
	}
	return out
}

// imgWriteArchive writes an image archive of layers and returns its path.
func imgWriteArchive(t testing.TB, format, tag string, cfg v1.ImageConfig, layers ...archive.Layer) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image.tar")
	if err := archive.WriteImage(out, format, tag, archive.Image{Layers: layers, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	return out
}

// imgDirLayer is a layer with the given files ("path" → content).
func imgDirLayer(t testing.TB, files map[string]string) archive.Layer {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return archive.Layer{Dir: dir}
}

var imgBusyboxConfig = v1.ImageConfig{Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, Cmd: []string{"sh"}}

// imgDiskUsage sums the allocated blocks under p, hard-linked files once: what `du`
// reports, and what podrun must report.
func imgDiskUsage(t *testing.T, p string) int64 {
	t.Helper()
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	err := filepath.WalkDir(p, func(q string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(q, &st); err != nil {
			return err
		}
		if st.Nlink > 1 && st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			k := inode{st.Dev, st.Ino}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		total += st.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// imgParseSize reads a size as `podrun images` and `image prune` print it (2.25MB, 812kB).
func imgParseSize(t *testing.T, s string) float64 {
	t.Helper()
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"B", 1}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil {
				t.Fatalf("size %q: %v", s, err)
			}
			return f * u.mult
		}
	}
	t.Fatalf("size %q has no unit", s)
	return 0
}

// imgCheckSize fails unless printed (3 significant digits) is bytes.
func imgCheckSize(t *testing.T, what, printed string, bytes int64) {
	t.Helper()
	got := imgParseSize(t, printed)
	if diff := got - float64(bytes); diff > 0.01*float64(bytes)+1 || -diff > 0.01*float64(bytes)+1 {
		t.Errorf("%s: printed %s, but %d bytes are on disk", what, printed, bytes)
	}
}

type imgRow struct{ repo, tag, id, size string }

// images parses `podrun images`.
func (e *env) imgImages() []imgRow {
	e.t.Helper()
	lines := strings.Split(strings.TrimSpace(e.must("images").stdout), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "REPOSITORY TAG IMAGE ID SIZE" {
		e.t.Fatalf("images header %q", lines[0])
	}
	var rows []imgRow
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 4 {
			e.t.Fatalf("images row %q", l)
		}
		rows = append(rows, imgRow{f[0], f[1], f[2], f[3]})
	}
	return rows
}

func (e *env) imgFind(repo, tag string) (imgRow, bool) {
	e.t.Helper()
	for _, r := range e.imgImages() {
		if r.repo == repo && r.tag == tag {
			return r, true
		}
	}
	return imgRow{}, false
}

func imgShortID(id string) string { return strings.TrimPrefix(id, "sha256:")[:12] }

func (e *env) imgLayerDir(diffID string) string {
	return filepath.Join(e.root, "images", "layers", strings.TrimPrefix(diffID, "sha256:"))
}

// imgEvents returns the Events lines of `podrun describe` with this reason.
func (e *env) imgEvents(pod, reason string) []string {
	e.t.Helper()
	out := e.must("describe", pod).stdout
	_, events, _ := strings.Cut(out, "\nEvents:")
	var lines []string
	for _, l := range strings.Split(events, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == reason {
			lines = append(lines, l)
		}
	}
	return lines
}

// The busybox test image pulled from a registry is listed with its true size; a second
// image on the same base layer downloads only its own layer; pulling again downloads
// no blob at all.
func TestImagePullFromRegistry(t *testing.T) {
	e := newEnv(t)
	reg := testregistry.Start(t, false)
	reg.Push(t, archive.DockerArchive, testImage, "busybox:1.28")
	base := imgDockerArchiveLayers(t, testImage)[0]
	extra := imgWriteArchive(t, archive.DockerArchive, "", imgBusyboxConfig,
		archive.Layer{Tar: base}, imgDirLayer(t, map[string]string{"extra/hello": "hello from the extra layer\n"}))
	reg.Push(t, archive.DockerArchive, extra, "busybox:1.28-extra")
	a, b := reg.Manifest(t, "busybox", "1.28"), reg.Manifest(t, "busybox", "1.28-extra")
	if len(a.Layers) != 1 || len(b.Layers) != 2 || b.Layers[0] != a.Layers[0] {
		t.Fatalf("setup: the two images should share their base layer blob: %v, %v", a.Layers, b.Layers)
	}

	refA := reg.Addr + "/busybox:1.28"
	r := e.must("pull", refA)
	if got := strings.TrimSpace(r.stdout); got != a.Config {
		t.Errorf("pull printed %q, want the image ID %s", got, a.Config)
	}
	// stderr is not a terminal: plain progress lines, no bars.
	if !strings.Contains(r.stderr, "Copying blob sha256:") || strings.Contains(r.stderr, "\r") {
		t.Errorf("pull progress is not one plain line per blob:\n%s", r.stderr)
	}
	gets := reg.BlobGets()
	for _, d := range append([]string{a.Config}, a.Layers...) {
		if gets[d] != 1 {
			t.Errorf("pulling %s fetched blob %s %d times, want 1", refA, d, gets[d])
		}
	}

	row, ok := e.imgFind(reg.Addr+"/busybox", "1.28")
	if !ok {
		t.Fatalf("images does not list %s:\n%v", refA, e.imgImages())
	}
	if row.id != imgShortID(a.Config) {
		t.Errorf("IMAGE ID %s, want %s", row.id, imgShortID(a.Config))
	}
	du := imgDiskUsage(t, e.imgLayerDir(a.DiffIDs[0]))
	imgCheckSize(t, "SIZE of "+refA, row.size, du)
	if du < int64(len(base))/2 {
		t.Errorf("layer of %d bytes on disk from a %d-byte tar", du, len(base))
	}

	// b shares the base layer: only its own layer and config are fetched.
	refB := reg.Addr + "/busybox:1.28-extra"
	r = e.must("pull", refB)
	after := reg.BlobGets()
	if after[b.Layers[0]] != 1 {
		t.Errorf("the shared base layer was fetched again (%d GETs in all)", after[b.Layers[0]])
	}
	for _, d := range []string{b.Config, b.Layers[1]} {
		if after[d] != 1 {
			t.Errorf("pulling %s fetched its blob %s %d times, want 1", refB, d, after[d])
		}
	}
	if !strings.Contains(r.stderr, "skipped: already exists") {
		t.Errorf("progress of %s does not show the base layer skipped:\n%s", refB, r.stderr)
	}
	rowB, ok := e.imgFind(reg.Addr+"/busybox", "1.28-extra")
	if !ok || rowB.id != imgShortID(b.Config) {
		t.Errorf("images lists %s as %+v (found %v), want ID %s", refB, rowB, ok, imgShortID(b.Config))
	}
	imgCheckSize(t, "SIZE of "+refB, rowB.size, du+imgDiskUsage(t, e.imgLayerDir(b.DiffIDs[1])))

	// Both again: the manifests are checked, no blob is downloaded.
	e.must("pull", refA)
	e.must("pull", refB)
	if again := reg.BlobGets(); !maps.Equal(again, after) {
		var fetched []string
		for d, n := range again {
			if n > after[d] {
				fetched = append(fetched, d)
			}
		}
		slices.Sort(fetched)
		t.Errorf("pulling present images fetched blobs again: %v (config %s and %s)", fetched, a.Config, b.Config)
	}
}

// imgOpenPty opens a pseudo-terminal of 100x30 characters: its controlling side and
// the terminal a process writes to.
func imgOpenPty(t *testing.T) (ptm, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		m.Close()
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	sl, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		m.Close()
		t.Fatalf("opening /dev/pts/%d: %v", n, err)
	}
	if err := unix.IoctlSetWinsize(int(sl.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 30, Col: 100}); err != nil {
		t.Fatal(err)
	}
	return m, sl
}

// On a terminal, `podrun pull` draws containers/image's per-layer progress bars instead
// of the plain lines it prints for logs.
func TestImagePullProgressOnTerminal(t *testing.T) {
	e := newEnv(t)
	reg := testregistry.Start(t, false)
	reg.Push(t, archive.DockerArchive, testImage, "busybox:1.28")
	m := reg.Manifest(t, "busybox", "1.28")
	ptm, tty := imgOpenPty(t)
	defer ptm.Close()
	cmd := exec.Command(podrunBin, e.args("pull", reg.Addr+"/busybox:1.28")...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&screen, ptm); close(copied) }() // ends with EIO once podrun exits
	err := cmd.Wait()
	<-copied
	t.Logf("terminal:\n%q", screen.String())
	if err != nil {
		t.Fatalf("pull: %v\n%s", err, screen.String())
	}
	if strings.TrimSpace(stdout.String()) != m.Config {
		t.Errorf("stdout %q, want the image ID", stdout.String())
	}
	short := strings.TrimPrefix(m.Layers[0], "sha256:")[:12]
	if !strings.Contains(screen.String(), "Copying blob "+short) || strings.Contains(screen.String(), "Copying blob sha256:") {
		t.Errorf("the terminal shows no containers/image progress bar for blob %s (or podrun's plain lines):\n%s", short, screen.String())
	}
}

// A pod whose image is only in the registry is pulled when it starts; Always pulls on
// every container start, IfNotPresent only once; Never waits for an absent image to be loaded.
func TestImagePullPolicyInPods(t *testing.T) {
	reg := testregistry.Start(t, false)
	reg.Push(t, archive.DockerArchive, testImage, "busybox:1.28")
	ref := reg.Addr + "/busybox:1.28"
	m := reg.Manifest(t, "busybox", "1.28")
	tagPath := "/v2/busybox/manifests/1.28"

	tests := []struct {
		policy         corev1.PullPolicy
		pullEveryStart bool
	}{
		{corev1.PullIfNotPresent, false},
		{corev1.PullAlways, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy), func(t *testing.T) {
			e := newEnv(t)
			before := reg.Count(tagPath)
			e.must(imgFastBackoff("apply", e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: pulled
spec:
  restartPolicy: Always
  containers:
  - name: c
    image: %s
    imagePullPolicy: %s
    command: ['sh', '-c', 'sleep 0.5; exit 1']
`, ref, tc.policy)))...)
			p := e.waitFor("pulled", time.Minute, "restarted twice", func(p *corev1.Pod) bool {
				return containerState(p, "c").RestartCount >= 2
			})
			st := containerState(p, "c")
			if st.ImageID != reg.Addr+"/busybox@"+m.Digest || st.Image != ref {
				t.Errorf("image %q, imageID %q; want %q and %q", st.Image, st.ImageID, ref, reg.Addr+"/busybox@"+m.Digest)
			}
			if ev := e.imgEvents("pulled", "Pulled"); len(ev) == 0 || !strings.Contains(ev[0], fmt.Sprintf("Successfully pulled image %q", ref)) {
				t.Errorf("Pulled events: %q", ev)
			}
			starts := int(containerState(e.pod("pulled"), "c").RestartCount) + 1
			pulling := e.imgEvents("pulled", "Pulling")
			pulls := reg.Count(tagPath) - before
			t.Logf("%d starts, %d Pulling events, %d requests for the tag", starts, len(pulling), pulls)
			if tc.pullEveryStart {
				// The kubelet pulls before every start: at least the 3 starts seen above.
				if len(pulling) < 3 || pulls < 3 {
					t.Errorf("imagePullPolicy Always: %d Pulling events and %d requests for %s after %d starts; want one pull per start", len(pulling), pulls, ref, starts)
				}
			} else {
				if len(pulling) != 1 || pulls != 1 {
					t.Errorf("imagePullPolicy IfNotPresent: %d Pulling events and %d requests for %s; want exactly 1", len(pulling), pulls, ref)
				}
				if ev := e.imgEvents("pulled", "Pulled"); len(ev) < 2 || !strings.Contains(ev[1], "already present on machine") {
					t.Errorf("a restart with the image present should say so; Pulled events: %q", ev)
				}
			}
		})
	}

	// As the kubelet: the pod is created (apply warns), its container waits
	// in ErrImageNeverPull, and starts once the image is in the store.
	t.Run("Never with an absent image waits for it", func(t *testing.T) {
		e := newEnv(t)
		r := e.podrun(imgFastBackoff("apply", e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: never
spec:
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    command: ['sleep', '600']
`, ref)))...)
		if r.code != 0 || !strings.Contains(r.stderr, "Warning: ") || !strings.Contains(r.stderr, "imagePullPolicy is Never") || !strings.Contains(r.stderr, ref) {
			t.Errorf("apply: %s\nwant exit 0 and a warning naming the image and the policy", r)
		}
		e.waitFor("never", 30*time.Second, "in ErrImageNeverPull", func(p *corev1.Pod) bool {
			w := containerState(p, "c").State.Waiting
			return w != nil && w.Reason == "ErrImageNeverPull"
		})
		e.must("load", "-i", testImage, "--tag", ref)
		e.waitFor("never", time.Minute, "running once the image is loaded", func(p *corev1.Pod) bool {
			return containerState(p, "c").State.Running != nil
		})
	})
}

// A missing tag leaves the container waiting in ErrImagePull, then ImagePullBackOff, with
// the registry's error; the pod stays Pending and starts once the tag is pushed.
func TestImagePullMissingTag(t *testing.T) {
	reg := testregistry.Start(t, false)
	tests := []struct {
		name, container, prefix string
		manifest                func(image string) string
	}{
		{"app container", "app", "", func(image string) string {
			return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: late
spec:
  containers:
  - name: app
    image: %s
    command: ['sleep', '3600']
`, image)
		}},
		{"init container", "init", "Init:", func(image string) string {
			return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: late
spec:
  initContainers:
  - name: init
    image: %s
    command: ['true']
  containers:
  - name: app
    image: busybox:1.28
    command: ['sleep', '3600']
`, image)
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tag := fmt.Sprintf("late-%d", i)
			image := reg.Addr + "/busybox:" + tag
			e.must(imgFastBackoff("apply", e.manifest(tc.manifest(image)))...)

			// Both reasons come back on every retry: collect what get shows until both
			// were seen in the status and in the STATUS column.
			statuses := map[string]bool{}
			messages := map[string]string{}
			var logsErr string
			for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				p := e.pod("late")
				if p.Status.Phase != corev1.PodPending {
					t.Fatalf("phase %s while the image cannot be pulled", p.Status.Phase)
				}
				if w := containerState(p, tc.container).State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
					messages[w.Reason] = w.Message
					if logsErr == "" {
						r := e.podrun("logs", "late", "-c", tc.container)
						if r.code == 0 {
							t.Errorf("logs of a container waiting for its image succeeded: %s", r)
						}
						logsErr = r.stderr
					}
				}
				statuses[e.status("late")] = true
				if len(messages) == 2 && statuses[tc.prefix+"ErrImagePull"] && statuses[tc.prefix+"ImagePullBackOff"] {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("saw STATUS %v and waiting reasons %v; want %sErrImagePull and %sImagePullBackOff", statuses, messages, tc.prefix, tc.prefix)
				}
			}
			if !strings.Contains(messages["ErrImagePull"], "manifest unknown") {
				t.Errorf("ErrImagePull message %q lacks the registry's \"manifest unknown\"", messages["ErrImagePull"])
			}
			if want := fmt.Sprintf("Back-off pulling image %q", image); messages["ImagePullBackOff"] != want {
				t.Errorf("ImagePullBackOff message %q, want %q", messages["ImagePullBackOff"], want)
			}
			if !strings.Contains(logsErr, "is waiting to start: image can't be pulled") && !strings.Contains(logsErr, "is waiting to start: trying and failing to pull image") {
				t.Errorf("logs said %q", logsErr)
			}
			if ev := e.imgEvents("late", "Failed"); len(ev) == 0 || !slices.ContainsFunc(ev, func(l string) bool { return strings.Contains(l, "manifest unknown") }) {
				t.Errorf("no Failed event with the registry's error: %q", ev)
			}
			if ev := e.imgEvents("late", "BackOff"); len(ev) == 0 {
				t.Errorf("no BackOff event")
			}

			reg.Push(t, archive.DockerArchive, testImage, "busybox:"+tag)
			p := e.waitPhase("late", corev1.PodRunning, 30*time.Second)
			if st := containerState(p, "app"); st.State.Running == nil {
				t.Errorf("app %+v, want running", st.State)
			}
			if st := containerState(p, tc.container); st.RestartCount != 0 {
				t.Errorf("failed pulls counted as restarts: %d", st.RestartCount)
			}
		})
	}
}

// A registry with htpasswd: podrun finds credentials where podman and docker keep them,
// and reports the registry's 401 without them.
func TestImagePullAuthenticated(t *testing.T) {
	reg := testregistry.Start(t, true)
	reg.Push(t, archive.DockerArchive, testImage, "private/busybox:1.28")
	ref := reg.Addr + "/private/busybox:1.28"
	creds := base64.StdEncoding.EncodeToString([]byte(reg.User + ":" + reg.Pass))
	authJSON, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.Addr: map[string]string{"auth": creds}}})
	writeAuth := func(t *testing.T, p string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, authJSON, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unauthorized := func(msg string) bool {
		return strings.Contains(msg, "authentication required") || strings.Contains(msg, "unauthorized")
	}

	t.Run("pull without credentials", func(t *testing.T) {
		e := newEnv(t)
		_, _, env := imgCredEnv(t)
		r := e.imgPodrunEnv(env, "pull", ref)
		if r.code != 1 || !unauthorized(r.stderr) {
			t.Errorf("pull: %s\nwant exit 1 with the registry's 401 text", r)
		}
	})
	t.Run("pull --authfile", func(t *testing.T) {
		e := newEnv(t)
		_, _, env := imgCredEnv(t)
		authFile := filepath.Join(t.TempDir(), "auth.json")
		writeAuth(t, authFile)
		if r := e.imgPodrunEnv(env, "pull", "--authfile", authFile, ref); r.code != 0 {
			t.Fatalf("pull: %s", r)
		}
		if _, ok := e.imgFind(reg.Addr+"/private/busybox", "1.28"); !ok {
			t.Errorf("images does not list %s", ref)
		}
	})

	pods := []struct {
		name  string
		place func(home, runtimeDir string) string // where the credentials go ("" = nowhere)
	}{
		{"pod with containers auth.json", func(_, rd string) string { return filepath.Join(rd, "containers", "auth.json") }},
		{"pod with docker config.json", func(home, _ string) string { return filepath.Join(home, ".docker", "config.json") }},
		{"pod without credentials", func(string, string) string { return "" }},
	}
	for _, tc := range pods {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			home, runtimeDir, env := imgCredEnv(t)
			if p := tc.place(home, runtimeDir); p != "" {
				writeAuth(t, p)
			}
			r := e.imgPodrunEnv(env, imgFastBackoff("apply", e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: private
spec:
  containers:
  - name: c
    image: %s
    command: ['sleep', '3600']
`, ref)))...)
			if r.code != 0 {
				t.Fatalf("apply: %s", r)
			}
			if tc.place(home, runtimeDir) != "" {
				e.waitPhase("private", corev1.PodRunning, 30*time.Second)
				return
			}
			p := e.waitFor("private", 30*time.Second, "in ErrImagePull", func(p *corev1.Pod) bool {
				w := containerState(p, "c").State.Waiting
				return w != nil && w.Reason == "ErrImagePull"
			})
			if msg := containerState(p, "c").State.Waiting.Message; !unauthorized(msg) {
				t.Errorf("ErrImagePull message %q lacks the registry's 401 text", msg)
			}
		})
	}
}

// An OCI archive of two layers loads and runs; rmi refuses an image a pod uses and
// removes it once the pod is gone, keeping layers other images share; image prune removes
// unused images and their layers and reports the space truthfully.
func TestImageLoadRmiPrune(t *testing.T) {
	e := newEnv(t)
	base := imgDockerArchiveLayers(t, testImage)[0]
	used := imgWriteArchive(t, archive.OCIArchive, "podrun.test/oci-box:1", imgBusyboxConfig,
		archive.Layer{Tar: base}, imgDirLayer(t, map[string]string{"etc/podrun-test": "from the OCI layer\n"}))
	unused := imgWriteArchive(t, archive.OCIArchive, "podrun.test/unused:1", imgBusyboxConfig,
		archive.Layer{Tar: base}, imgDirLayer(t, map[string]string{"opt/big": strings.Repeat("unused ", 200000)}))
	if r := e.must("load", "-i", used); !strings.Contains(r.stdout, "Loaded image: podrun.test/oci-box:1") {
		t.Errorf("load printed %q", r.stdout)
	}
	e.must("load", "-i", unused)
	layers, err := os.ReadDir(filepath.Join(e.root, "images", "layers"))
	if err != nil || len(layers) != 3 {
		t.Fatalf("store has layers %v (%v); want 3: the shared base and one per image", layers, err)
	}

	e.apply(`
apiVersion: v1
kind: Pod
metadata:
  name: ocipod
spec:
  containers:
  - name: c
    image: podrun.test/oci-box:1
    imagePullPolicy: Never
    command: ['sh', '-c', 'cat /etc/podrun-test; sleep 3600']
---
apiVersion: v1
kind: Pod
metadata:
  name: bbpod
spec:
  containers:
  - name: c
    image: busybox:1.28
    command: ['sleep', '3600']
`)
	e.waitPhase("ocipod", corev1.PodRunning, 30*time.Second)
	e.waitPhase("bbpod", corev1.PodRunning, 30*time.Second)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(e.must("logs", "ocipod").stdout, "from the OCI layer"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ocipod logs: %q", e.must("logs", "ocipod").stdout)
		}
	}

	r := e.podrun("rmi", "podrun.test/oci-box:1")
	if r.code != 1 || !strings.Contains(r.stderr, "in use") {
		t.Errorf("rmi of an image a pod uses: %s\nwant exit 1, in use", r)
	}
	if !strings.Contains(r.stderr, "ocipod") {
		t.Errorf("rmi refused without naming the pod that uses the image: %q", r.stderr)
	}
	if _, ok := e.imgFind("podrun.test/oci-box", "1"); !ok {
		t.Fatal("a refused rmi removed the image")
	}
	e.must("delete", "ocipod", "--grace-period", "1")
	e.must("rmi", "podrun.test/oci-box:1")
	if _, ok := e.imgFind("podrun.test/oci-box", "1"); ok {
		t.Error("rmi left the image listed")
	}
	if layers, _ := os.ReadDir(filepath.Join(e.root, "images", "layers")); len(layers) != 2 {
		t.Errorf("after rmi the store has %d layers, want 2 (the shared base and unused's)", len(layers))
	}

	// prune: unused:1 goes with its own layer; busybox:1.28 (bbpod runs it) and the base stay.
	store := filepath.Join(e.root, "images")
	before := imgDiskUsage(t, store)
	r = e.must("image", "prune")
	freed := before - imgDiskUsage(t, store)
	t.Logf("prune:\n%s(du says %d bytes freed)", r.stdout, freed)
	if strings.Count(r.stdout, "deleted: ") != 1 {
		t.Errorf("prune should delete exactly podrun.test/unused:1:\n%s", r.stdout)
	}
	if _, after, ok := strings.Cut(r.stdout, "Total reclaimed space: "); !ok {
		t.Errorf("prune does not report the space freed:\n%s", r.stdout)
	} else {
		imgCheckSize(t, "reclaimed space", strings.TrimSpace(after), freed)
	}
	if freed < 1_000_000 {
		t.Errorf("prune freed %d bytes; unused:1's own layer alone holds 1.4MB", freed)
	}
	rows := e.imgImages()
	if len(rows) != 1 || rows[0].repo != "docker.io/library/busybox" {
		t.Errorf("after prune images lists %v, want busybox:1.28 alone", rows)
	}
	if r := e.must("exec", "bbpod", "--", "true"); r.code != 0 {
		t.Errorf("bbpod after prune: %s", r)
	}

	// Once no pod uses anything, prune empties the store.
	e.must("delete", "bbpod", "--grace-period", "1")
	e.must("image", "prune")
	for _, d := range []string{"layers", "blobs/sha256"} {
		if entries, _ := os.ReadDir(filepath.Join(store, d)); len(entries) != 0 {
			t.Errorf("after pruning everything, %s holds %d entries", d, len(entries))
		}
	}
	if rows := e.imgImages(); len(rows) != 0 {
		t.Errorf("after pruning everything images lists %v", rows)
	}
}

// Three `podrun pull` processes of one image all succeed and each blob is downloaded once.
func TestImagePullConcurrentProcesses(t *testing.T) {
	e := newEnv(t)
	reg := testregistry.Start(t, false)
	// Incompressible, so that the download takes long enough for the pulls to overlap.
	rnd := make([]byte, 4<<20)
	rand.New(rand.NewSource(7)).Read(rnd)
	img := imgWriteArchive(t, archive.OCIArchive, "", imgBusyboxConfig,
		imgDirLayer(t, map[string]string{"random": string(rnd)}), imgDirLayer(t, map[string]string{"small": "s"}))
	reg.Push(t, archive.OCIArchive, img, "concurrent/img:1")
	m := reg.Manifest(t, "concurrent/img", "1")
	ref := reg.Addr + "/concurrent/img:1"

	cmds := make([]*exec.Cmd, 3)
	outs := make([]*bytes.Buffer, 3)
	for i := range cmds {
		cmds[i] = exec.Command(podrunBin, e.args("pull", ref)...)
		outs[i] = &bytes.Buffer{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("pull %d: %v\n%s", i, err, outs[i])
		}
		if !strings.Contains(outs[i].String(), m.Config) {
			t.Errorf("pull %d did not print the image ID %s:\n%s", i, m.Config, outs[i])
		}
	}
	gets := reg.BlobGets()
	for _, d := range append([]string{m.Config}, m.Layers...) {
		if gets[d] != 1 {
			t.Errorf("blob %s downloaded %d times by 3 concurrent pulls, want 1", d, gets[d])
		}
	}
	n := 0
	for _, r := range e.imgImages() {
		if r.repo == reg.Addr+"/concurrent/img" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("images lists %s %d times", ref, n)
	}
	for _, d := range m.DiffIDs {
		if _, err := os.Stat(e.imgLayerDir(d)); err != nil {
			t.Errorf("layer %s: %v", d, err)
		}
	}
	if tmp, _ := os.ReadDir(filepath.Join(e.root, "images", "tmp")); len(tmp) != 0 {
		t.Errorf("concurrent pulls left %d entries in the store's tmp", len(tmp))
	}
}

type imgTarEntry struct {
	name string
	typ  byte // tar.TypeReg when 0
	body string
	link string
}

func imgTar(t *testing.T, entries ...imgTarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, en := range entries {
		h := &tar.Header{Name: en.name, Typeflag: en.typ, Linkname: en.link, Mode: 0o644, ModTime: time.Unix(1700000000, 0)}
		switch h.Typeflag {
		case 0:
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(en.body))
		case tar.TypeDir:
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(en.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Layer tars that try to write outside the layer are rejected, or contained in the
// store: nothing appears or changes outside it, and a failed load leaves nothing behind.
func TestImageLoadMaliciousLayer(t *testing.T) {
	outside := t.TempDir() // what a layer tries to reach
	rel := strings.TrimPrefix(outside, "/")
	up := strings.Repeat("../", 12)
	victim := filepath.Join(outside, "victim")
	tests := []struct {
		name    string
		entries []imgTarEntry
		// A rejection must say what failed: one of these (the entry, or its kind).
		clear []string
	}{
		{"dot-dot path", []imgTarEntry{{name: up + rel + "/dotdot", body: "pwned"}}, []string{"dotdot"}},
		{"absolute path", []imgTarEntry{{name: outside + "/absolute", body: "pwned"}}, []string{"absolute"}},
		{"file through a symlink to an outside directory", []imgTarEntry{
			{name: "escape", typ: tar.TypeSymlink, link: outside},
			{name: "escape/through-symlink", body: "pwned"},
		}, []string{"through-symlink", "symlink"}},
		{"file through a relative symlink climbing out", []imgTarEntry{
			{name: "up", typ: tar.TypeSymlink, link: up},
			{name: "up/" + rel + "/through-dotdot-symlink", body: "pwned"},
		}, []string{"through-dotdot-symlink", "symlink"}},
		{"overwrite a host file through a symlink", []imgTarEntry{
			{name: "victim", typ: tar.TypeSymlink, link: victim},
			{name: "victim", body: "pwned"},
		}, []string{"victim", "symlink"}},
		{"hard link to a host file", []imgTarEntry{{name: "hardlink", typ: tar.TypeLink, link: victim}}, []string{"hardlink", "hard link"}},
		{"hard link climbing out", []imgTarEntry{{name: "hardlink", typ: tar.TypeLink, link: up + rel + "/victim"}}, []string{"hardlink", "hard link"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(victim, []byte("original"), 0o644); err != nil {
				t.Fatal(err)
			}
			e := newEnv(t)
			layer := imgTar(t, append([]imgTarEntry{{name: "bin/", typ: tar.TypeDir}}, tc.entries...)...)
			img := imgWriteArchive(t, archive.DockerArchive, "podrun.test/evil:1", v1.ImageConfig{}, archive.Layer{Tar: layer})
			r := e.podrun("load", "-i", img)
			t.Logf("load: exit %d, %s", r.code, strings.TrimSpace(r.stderr))
			switch r.code {
			case 0: // contained: the layer holds the files, inside the store
			case 1:
				if !strings.Contains(r.stderr, "loading docker-archive") || !strings.Contains(r.stderr, "unpacking layer") || strings.Contains(r.stderr, "goroutine") {
					t.Errorf("load failed without saying it was unpacking a layer: %q", r.stderr)
				}
				if !slices.ContainsFunc(tc.clear, func(s string) bool { return strings.Contains(r.stderr, s) }) {
					t.Errorf("load failed without naming the entry or its kind (%q): %q", tc.clear, r.stderr)
				}
				if _, ok := e.imgFind("podrun.test/evil", "1"); ok {
					t.Error("a failed load left the image listed")
				}
				if tmp, _ := os.ReadDir(filepath.Join(e.root, "images", "tmp")); len(tmp) != 0 {
					t.Errorf("a failed load left %d entries in the store's tmp", len(tmp))
				}
			default:
				t.Errorf("load: %s\nwant success (contained) or exit 1 (rejected)", r)
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 || entries[0].Name() != "victim" {
				var names []string
				for _, en := range entries {
					names = append(names, en.Name())
				}
				t.Errorf("the layer wrote outside the store: %s holds %v", outside, names)
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(victim, &st); err != nil || st.Nlink != 1 || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
				t.Errorf("the host file %s was replaced or linked (nlink %d, mode %o): %v", victim, st.Nlink, st.Mode, err)
			}
			if data, _ := os.ReadFile(victim); string(data) != "original" {
				t.Errorf("the host file %s now holds %q", victim, data)
			}
		})
	}
}

// BenchmarkPullVsSkopeo measures `podrun pull` of the busybox test image from a local
// registry into an empty store (download, unpack, index) against `skopeo copy` of the
// same image to a dir: (download only). Most of podrun's extra time is unpacking, i.e.
// creating busybox's ~460 applet symlinks, which is slow on a busy ext4 (inode allocation).
func BenchmarkPullVsSkopeo(b *testing.B) {
	skopeo := testregistry.RequireTool(b, "skopeo", "skopeo")
	reg := testregistry.Start(b, false)
	reg.Push(b, archive.DockerArchive, testImage, "busybox:1.28")
	ref := reg.Addr + "/busybox:1.28"
	run := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return d
	}
	var podrunTime, skopeoTime time.Duration
	b.ResetTimer()
	for range b.N {
		dir := b.TempDir()
		podrunTime += run(podrunBin, "--root", filepath.Join(dir, "root"), "--run-root", filepath.Join(dir, "run"), "pull", "-q", ref)
		skopeoTime += run(skopeo, "copy", "-q", "--src-tls-verify=false", "docker://"+ref, "dir:"+filepath.Join(dir, "dir"))
	}
	podrunMs := float64(podrunTime.Microseconds()) / 1000 / float64(b.N)
	skopeoMs := float64(skopeoTime.Microseconds()) / 1000 / float64(b.N)
	b.ReportMetric(podrunMs, "podrun-ms/op")
	b.ReportMetric(skopeoMs, "skopeo-ms/op")
	b.ReportMetric(podrunMs/skopeoMs, "podrun/skopeo")
}

// imagePullSecrets as the kubelet reads them: a missing Secret is a
// FailedToRetrieveImagePullSecret warning and the pull goes on without it (and
// fails with the registry's 401); once a kubernetes.io/dockerconfigjson Secret
// with the credentials exists, the next retry pulls. A kubernetes.io/dockercfg
// Secret works too, and a wrong password is reported with the secret's name.
func TestImagePullSecrets(t *testing.T) {
	reg := testregistry.Start(t, true)
	reg.Push(t, archive.DockerArchive, testImage, "private/busybox:1.28")
	ref := reg.Addr + "/private/busybox:1.28"
	e := newEnv(t)
	_, _, env := imgCredEnv(t) // the host has no credentials
	auth := func(pass string) string {
		return base64.StdEncoding.EncodeToString([]byte(reg.User + ":" + pass))
	}
	pod := func(name, secret string) string {
		return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  imagePullSecrets: [{name: %s}]
  containers:
  - name: c
    image: %s
    command: ['sleep', '3600']
`, name, secret, ref)
	}
	apply := func(yaml string) {
		t.Helper()
		if r := e.imgPodrunEnv(env, imgFastBackoff("apply", "-f", e.manifest(yaml))...); r.code != 0 {
			t.Fatalf("apply: %s", r)
		}
	}
	apply(pod("withsecret", "regcred"))
	p := e.waitFor("withsecret", 30*time.Second, "in ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
		w := containerState(p, "c").State.Waiting
		return w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff")
	})
	if ev := e.imgEvents("withsecret", "FailedToRetrieveImagePullSecret"); len(ev) == 0 || !strings.Contains(strings.Join(ev, "\n"), "Unable to retrieve some image pull secrets (regcred); attempting to pull the image may not succeed.") {
		t.Errorf("no FailedToRetrieveImagePullSecret event naming regcred: %q", ev)
	}
	failedEv := strings.Join(e.imgEvents("withsecret", "Failed"), "\n")
	if !strings.Contains(failedEv, "authentication required") && !strings.Contains(failedEv, "unauthorized") {
		t.Errorf("the failed pull's event lacks the registry's 401: %q (state %+v)", failedEv, containerState(p, "c").State)
	}
	// The Secret arrives: the next retry uses it.
	apply(fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: regcred}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"%s": {"auth": "%s"}}}'
`, reg.Addr, auth(reg.Pass)))
	e.waitPhase("withsecret", corev1.PodRunning, 60*time.Second)
	if ev := strings.Join(e.imgEvents("withsecret", "Pulled"), "\n"); !strings.Contains(ev, "Image size:") {
		t.Errorf("Pulled event %q lacks the image size", ev)
	}

	// The old .dockercfg form; and a wrong password, named with its secret.
	e.must("delete", "withsecret", "--force", "--grace-period", "0")
	e.must("rmi", ref)
	apply(fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: oldcfg}
type: kubernetes.io/dockercfg
stringData:
  .dockercfg: '{"http://%s": {"username": "%s", "password": "%s"}}'
---
apiVersion: v1
kind: Secret
metadata: {name: wrongpass}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"%s": {"auth": "%s"}}}'
`, reg.Addr, reg.User, reg.Pass, reg.Addr, auth("wrong")))
	apply(pod("dockercfg", "oldcfg"))
	e.waitPhase("dockercfg", corev1.PodRunning, 60*time.Second)
	e.must("delete", "dockercfg", "--force", "--grace-period", "0")
	e.must("rmi", ref)
	apply(pod("wrong", "wrongpass"))
	p = e.waitFor("wrong", 30*time.Second, "in ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
		w := containerState(p, "c").State.Waiting
		return w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff")
	})
	failedEv = strings.Join(e.imgEvents("wrong", "Failed"), "\n")
	if !strings.Contains(failedEv, `secret "wrongpass"`) {
		t.Errorf("the failed pull's event does not name the secret whose credentials failed: %q", failedEv)
	}
}

// While apply --wait waits, it shows the pull: without a terminal one plain
// line when the pull starts and one when it ends (with the sizes), and one line
// per STATUS change; nothing of that with -q.
func TestApplyWaitPullProgressPlain(t *testing.T) {
	reg := testregistry.Start(t, false)
	reg.Push(t, archive.DockerArchive, testImage, "busybox:1.28")
	ref := reg.Addr + "/busybox:1.28"
	e := newEnv(t)
	pod := e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: pulled}
spec:
  containers: [{name: c, image: %s, command: ['sleep', '3600']}]
`, ref))
	r := e.must("apply", "-f", pod, "--wait", "--timeout", "2m")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	idx := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		return -1
	}
	start := idx(fmt.Sprintf("pod/pulled pulling image %q", ref))
	end := idx(fmt.Sprintf("pod/pulled pulled image %q in ", ref))
	running := idx("pod/pulled Running")
	if start < 0 || end < start || running < end || !strings.Contains(lines[max(end, 0)], "downloaded)") {
		t.Fatalf("apply --wait stderr: want a line for the pull's start, its end with the sizes, then Running:\n%s", r.stderr)
	}
	for _, l := range lines {
		if strings.Contains(l, "\x1b") || strings.Contains(l, "\r") {
			t.Errorf("terminal control in plain output: %q", l)
		}
	}
	// Pulled again (imagePullPolicy Always is implied by no tag? the tag is
	// kept: remove the image so that the pod pulls it again), quietly.
	e.must("delete", "pulled", "--force", "--grace-period", "0")
	e.must("rmi", ref)
	r = e.must("apply", "-f", pod, "--wait", "--timeout", "2m", "-q")
	if strings.Contains(r.stderr, "pulling") || strings.Contains(r.stderr, "pulled image") || strings.Contains(r.stderr, "Running") {
		t.Fatalf("apply --wait -q printed progress:\n%s", r.stderr)
	}
}

// On a terminal, apply --wait draws the pull as one progress bar per layer
// (mpb, as containers/image), and the STATUS changes above them.
func TestApplyWaitPullProgressOnTerminal(t *testing.T) {
	reg := testregistry.Start(t, false)
	reg.Push(t, archive.DockerArchive, testImage, "busybox:1.28")
	m := reg.Manifest(t, "busybox", "1.28")
	ref := reg.Addr + "/busybox:1.28"
	reg.Throttle(600 << 10) // the 1.1 MB layer takes about two seconds: the bar moves
	e := newEnv(t)
	pod := e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: tty}
spec:
  containers: [{name: c, image: %s, command: ['sleep', '3600']}]
`, ref))
	ptm, tty := imgOpenPty(t)
	defer ptm.Close()
	cmd := exec.Command(podrunBin, e.args("apply", "-f", pod, "--wait", "--timeout", "2m")...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&screen, ptm); close(copied) }()
	err := cmd.Wait()
	<-copied
	t.Logf("terminal:\n%q", screen.String())
	if err != nil {
		t.Fatalf("apply --wait: %v\n%s", err, screen.String())
	}
	short := strings.TrimPrefix(m.Layers[0], "sha256:")[:12]
	s := screen.String()
	if !strings.Contains(s, "busybox:1.28 "+short) || !strings.Contains(s, "done") {
		t.Errorf("the terminal shows no progress bar for layer %s:\n%s", short, s)
	}
	if !strings.Contains(s, "[===") {
		t.Errorf("no bar drawn on the terminal:\n%q", s)
	}
	// Drawn while the layer downloads: frames redrawn in place (the cursor
	// moves up) with a part of the layer counted, before "done".
	if !strings.Contains(s, "\x1b[") || !regexp.MustCompile(` / \d+\.\d MiB`).MatchString(s) {
		t.Errorf("no bar seen in progress (a frame with the bytes so far of the MiB, redrawn in place):\n%q", s)
	}
	if !strings.Contains(s, "pod/tty Running") || !strings.Contains(s, "pod/tty ready") {
		t.Errorf("the terminal lacks the STATUS change and the verdict:\n%s", s)
	}
	if strings.Contains(s, "pulling image") {
		t.Errorf("plain pull lines on a terminal:\n%s", s)
	}
}
