package integration

import (
	"archive/tar"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/tools/mkimage/archive"
)

// hostSnapshot lists every entry under dir: its type, mode, link target and content.
func hostSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case info.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			desc += " " + string(data)
		}
		snap[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func diffSnapshots(before, after map[string]string) []string {
	var diffs []string
	for p, b := range before {
		if a, ok := after[p]; !ok {
			diffs = append(diffs, "removed "+p+" ("+b+")")
		} else if a != b {
			diffs = append(diffs, fmt.Sprintf("changed %s: %q → %q", p, b, a))
		}
	}
	for p, a := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, "created "+p+" ("+a+")")
		}
	}
	slices.Sort(diffs)
	return diffs
}

// An image whose /dev, /proc, /etc/hosts, /etc/resolv.conf or /etc/hostname is an
// absolute symlink to a host path must not make the container runtime write, create or
// delete anything there (runc GHSA-xjvp-4fhw-gc47 / CVE-2026-41579: runc 1.3.3 created
// fd, stdin, stdout, stderr and ptmx symlinks in the host directory /dev pointed at and
// deleted a host file named ptmx; fixed in runc 1.3.6 and ≥ 1.4, podrun links 1.5). One
// image per path, so that the runtime's refusal of one does not hide another; the
// container (when the runtime starts it) also tries to write through every such path.
func TestMaliciousImageSymlinksOutOfRootfs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		links []string // paths in the image that become symlinks to the same path under outside
	}{
		{"dev", []string{"dev"}},
		{"proc", []string{"proc"}},
		{"etc files", []string{"etc/hosts", "etc/resolv.conf", "etc/hostname"}},
		{"all", []string{"dev", "proc", "etc/hosts", "etc/resolv.conf", "etc/hostname"}},
	} {
		t.Run(tc.name, func(t *testing.T) { maliciousSymlinkImage(t, tc.links) })
	}
}

func maliciousSymlinkImage(t *testing.T, links []string) {
	e := newEnv(t)
	outside, err := os.MkdirTemp("", "podrun-psk-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	for _, d := range []string{"dev", "proc", "etc"} {
		if err := os.MkdirAll(filepath.Join(outside, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"dev/ptmx":        "host ptmx, must survive",
		"dev/null":        "host null, must survive",
		"dev/shm":         "host shm, must survive",
		"proc/self":       "host proc/self, must survive",
		"etc/hosts":       "127.0.0.1 host-hosts\n",
		"etc/resolv.conf": "nameserver 192.0.2.53\n",
		"etc/hostname":    "host-hostname\n",
	}
	for p, body := range files {
		if err := os.WriteFile(filepath.Join(outside, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := hostSnapshot(t, outside)

	// The busybox layers, then a layer that turns those paths into symlinks out.
	var layers []archive.Layer
	for _, l := range imgDockerArchiveLayers(t, testImage) {
		layers = append(layers, archive.Layer{Tar: l})
	}
	entries := []imgTarEntry{{name: "etc/", typ: tar.TypeDir}}
	for _, l := range links {
		entries = append(entries, imgTarEntry{name: l, typ: tar.TypeSymlink, link: filepath.Join(outside, l)})
	}
	layers = append(layers, archive.Layer{Tar: imgTar(t, entries...)})
	img := imgWriteArchive(t, archive.DockerArchive, "podrun.test/symlinks:1", v1.ImageConfig{
		Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, Cmd: []string{"sh"},
	}, layers...)
	e.must("load", "-i", img)

	// Each run of the container tries again: init container, app container, and the
	// exec of a second process into the running app.
	script := `for f in /etc/hosts /etc/resolv.conf /etc/hostname /dev/ptmx /dev/pwned /proc/pwned; do echo pwned > $f; done 2>/dev/null; rm -f /dev/ptmx /dev/null /proc/self 2>/dev/null; ls /dev; cat /etc/hosts`
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: evil}
spec:
  restartPolicy: Never
  initContainers:
  - name: first
    image: podrun.test/symlinks:1
    imagePullPolicy: Never
    command: ['sh', '-c', '` + script + `']
  containers:
  - name: app
    image: podrun.test/symlinks:1
    imagePullPolicy: Never
    command: ['sh', '-c', '` + script + `; sleep 3600']
`)
	// Either the runtime refuses the container (it fails) or it runs contained.
	p := e.waitFor("evil", 60*time.Second, "settled", func(p *corev1.Pod) bool {
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return true
		}
		return containerState(p, "app").State.Running != nil
	})
	for _, name := range []string{"first", "app"} {
		cs := containerState(p, name)
		if term := cs.State.Terminated; term != nil {
			t.Logf("container %s: exit %d %s: %s", name, term.ExitCode, term.Reason, term.Message)
		} else {
			t.Logf("container %s: %+v", name, cs.State)
		}
		if r := e.podrun("logs", "evil", "-c", name); r.code == 0 && r.stdout != "" {
			t.Logf("logs of %s:\n%s", name, r.stdout)
		}
	}
	if containerState(p, "app").State.Running != nil {
		r := e.podrun("exec", "evil", "-c", "app", "--", "sh", "-c", script)
		t.Logf("exec: exit %d", r.code)
	}
	if diffs := diffSnapshots(before, hostSnapshot(t, outside)); len(diffs) > 0 {
		t.Errorf("the image's symlinks reached the host while the pod ran:\n%s", strings.Join(diffs, "\n"))
	}
	e.must("delete", "evil", "--grace-period", "1")
	if diffs := diffSnapshots(before, hostSnapshot(t, outside)); len(diffs) > 0 {
		t.Errorf("the image's symlinks reached the host (after delete):\n%s", strings.Join(diffs, "\n"))
	}
}
