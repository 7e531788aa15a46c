//go:build podrun_image

package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// makeLayers creates n layer directories with long paths; layer i has file layer-i and
// a file "top" saying i, so the top layer's copy must win.
func makeLayers(t *testing.T, n int) []string {
	t.Helper()
	base := filepath.Join(t.TempDir(), strings.Repeat("long-directory-name-", 4))
	var dirs []string
	for i := range n {
		d := filepath.Join(base, fmt.Sprintf("layer-%03d-%s", i, strings.Repeat("x", 40)))
		writeTree(t, d, map[string]string{fmt.Sprintf("layer-%d", i): "", "top": strconv.Itoa(i)})
		dirs = append(dirs, d)
	}
	return dirs
}

func mountDirs(t *testing.T) (upper, work, target string) {
	t.Helper()
	base := t.TempDir()
	upper, work, target = filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "rootfs")
	for _, d := range []string{upper, work, target} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := UnmountRootfs(target); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return upper, work, target
}

func TestMountRootfs(t *testing.T) {
	for _, n := range []int{1, 2, 20, 150} {
		t.Run(fmt.Sprintf("%d layers", n), func(t *testing.T) {
			layers := makeLayers(t, n)
			upper, work, target := mountDirs(t)
			cwd, _ := os.Getwd()
			if err := MountRootfs(layers, upper, work, target); err != nil {
				t.Fatal(err)
			}
			if now, _ := os.Getwd(); now != cwd {
				t.Errorf("working directory changed to %s", now)
			}
			if !isMounted(t, target) {
				t.Fatal("not mounted")
			}
			// Newer kernels show the option as fsync=volatile.
			if opts := superOptions(t, target); !noVolatile.Load() && !slices.Contains(opts, "volatile") && !slices.Contains(opts, "fsync=volatile") {
				t.Errorf("the overlay is not volatile: %v", opts)
			}
			if got := readFile(t, filepath.Join(target, "top")); got != strconv.Itoa(n-1) {
				t.Errorf("top = %s, want the top layer's %d", got, n-1)
			}
			if got := len(listDir(t, target)); got != n+1 {
				t.Errorf("rootfs has %d entries, want %d", got, n+1)
			}
			if err := os.WriteFile(filepath.Join(target, "new"), []byte("w"), 0o644); err != nil {
				t.Fatal(err)
			}
			if readFile(t, filepath.Join(upper, "new")) != "w" {
				t.Error("write did not land in the upper dir")
			}
			if err := UnmountRootfs(target); err != nil {
				t.Fatal(err)
			}
			if isMounted(t, target) {
				t.Error("still mounted")
			}
		})
	}
}

// superOptions are the filesystem's options of the mount at target (mountinfo's last field).
func superOptions(t *testing.T, target string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == target {
			return strings.Split(f[len(f)-1], ",")
		}
	}
	return nil
}

func TestMountRootfsConcurrent(t *testing.T) {
	layers := makeLayers(t, 120) // long enough for the short-name path
	var wg sync.WaitGroup
	errs := make([]error, 8)
	targets := make([]string, 8)
	for i := range errs {
		upper, work, target := mountDirs(t)
		targets[i] = target
		wg.Go(func() { errs[i] = MountRootfs(layers, upper, work, target) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("mount %d: %v", i, err)
			continue
		}
		if got := readFile(t, filepath.Join(targets[i], "top")); got != "119" {
			t.Errorf("mount %d: top = %s", i, got)
		}
	}
}

func TestMountRootfsErrors(t *testing.T) {
	upper, work, target := mountDirs(t)
	tests := []struct {
		name   string
		layers []string
	}{
		{"no layers", nil},
		{"relative path", []string{"layer"}},
		{"colon in path", []string{"/tmp/a:b"}},
		{"too many layers", makeLayers(t, 600)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := MountRootfs(tt.layers, upper, work, target); err == nil {
				t.Error("MountRootfs succeeded")
			}
			if isMounted(t, target) {
				t.Error("mounted anyway")
			}
		})
	}
}

func TestUnmountRootfsIdempotent(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{dir, filepath.Join(dir, "missing")} {
		if err := UnmountRootfs(p); err != nil {
			t.Errorf("UnmountRootfs(%s) = %v, want nil", p, err)
		}
	}
	layers := makeLayers(t, 1)
	upper, work, target := mountDirs(t)
	// Mounted twice on the same target: both go. Each mount has upper and work
	// directories of its own (a volatile overlay's work directory cannot be reused).
	for i := range 2 {
		u, w := upper, work
		if i > 0 {
			u, w = filepath.Join(filepath.Dir(upper), "upper2"), filepath.Join(filepath.Dir(work), "work2")
			for _, d := range []string{u, w} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := MountRootfs(layers, u, w, target); err != nil {
			t.Fatal(err)
		}
	}
	if err := UnmountRootfs(target); err != nil {
		t.Fatal(err)
	}
	if isMounted(t, target) {
		t.Error("still mounted")
	}
	if err := UnmountRootfs(target); err != nil {
		t.Errorf("second unmount: %v", err)
	}
}

// A busy mount (a process has its cwd inside) is detached lazily.
func TestUnmountRootfsBusy(t *testing.T) {
	layers := makeLayers(t, 1)
	upper, work, target := mountDirs(t)
	if err := MountRootfs(layers, upper, work, target); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	cmd.Dir = target
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := UnmountRootfs(target); err != nil {
		t.Fatal(err)
	}
	if isMounted(t, target) {
		t.Error("still mounted")
	}
}

// The busybox test image, built by tools/busybox-image.sh as CI does, loads and runs.
func TestBusyboxImage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "busybox.tar")
	script, err := filepath.Abs("../tools/busybox-image.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, b)
	}
	s := newStore(t)
	start := time.Now()
	imgs, err := s.Load(context.Background(), out, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Load of the busybox image took %v", time.Since(start))
	img := imgs[0]
	if !slices.Equal(img.Names, []string{"docker.io/library/busybox:1.28"}) || !slices.Equal(img.Config.Cmd, []string{"sh"}) {
		t.Errorf("names %v cmd %v", img.Names, img.Config.Cmd)
	}
	root := mountImage(t, s, img)
	run := exec.Command("/bin/sh", "-c", "id -un nobody && ls /bin/wget /sbin/ifconfig /usr/bin/env >/dev/null && echo ok")
	run.SysProcAttr = chrootAttr(root)
	run.Env = img.Config.Env
	b, err := run.CombinedOutput()
	if err != nil || string(b) != "nobody\nok\n" {
		t.Errorf("running busybox in the rootfs: %v\n%s", err, b)
	}
	if st, err := os.Stat(filepath.Join(root, "tmp")); err != nil || st.Mode()&os.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Errorf("/tmp: %v %v", st.Mode(), err)
	}
	start = time.Now()
	if _, err := s.Load(context.Background(), out, "", nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("Load again (everything present) took %v", time.Since(start))
}

func chrootAttr(root string) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Chroot: root}
}

// An image volume's mount: the layers merged, the top one winning, and
// nothing writable (overlay with lower directories only, or a read-only
// bind of a single layer).
func TestMountReadOnly(t *testing.T) {
	for _, n := range []int{1, 2, 150} {
		t.Run(fmt.Sprintf("%d layers", n), func(t *testing.T) {
			layers := makeLayers(t, n)
			_, _, target := mountDirs(t)
			if err := MountReadOnly(layers, nil, target); err != nil {
				t.Fatal(err)
			}
			if !isMounted(t, target) {
				t.Fatal("not mounted")
			}
			if got := readFile(t, filepath.Join(target, "top")); got != strconv.Itoa(n-1) {
				t.Errorf("top = %s, want the top layer's %d", got, n-1)
			}
			if got := len(listDir(t, target)); got != n+1 {
				t.Errorf("the mount has %d entries, want %d", got, n+1)
			}
			err := os.WriteFile(filepath.Join(target, "new"), []byte("w"), 0o644)
			if !errors.Is(err, syscall.EROFS) {
				t.Errorf("writing into the mount: %v, want EROFS", err)
			}
			if err := os.Remove(filepath.Join(target, "top")); !errors.Is(err, syscall.EROFS) {
				t.Errorf("removing from the mount: %v, want EROFS", err)
			}
			if err := UnmountRootfs(target); err != nil {
				t.Fatal(err)
			}
			if isMounted(t, target) {
				t.Error("still mounted")
			}
			if got := readFile(t, filepath.Join(layers[n-1], "top")); got != strconv.Itoa(n-1) {
				t.Errorf("the top layer changed: %s", got)
			}
		})
	}
}

func TestMountReadOnlyErrors(t *testing.T) {
	_, _, target := mountDirs(t)
	for _, layers := range [][]string{nil, {"layer"}, {"/tmp/a:b", "/tmp/c"}} {
		if err := MountReadOnly(layers, nil, target); err == nil {
			t.Errorf("MountReadOnly(%q) succeeded", layers)
		}
		if isMounted(t, target) {
			t.Errorf("MountReadOnly(%q) mounted anyway", layers)
		}
	}
}
