//go:build podrun_image

package image

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/tools/mkimage/archive"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestNormalizeName(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "busybox", want: "docker.io/library/busybox:latest"},
		{in: "busybox:1.28", want: "docker.io/library/busybox:1.28"},
		{in: "library/busybox", want: "docker.io/library/busybox:latest"},
		{in: "docker.io/busybox", want: "docker.io/library/busybox:latest"},
		{in: "index.docker.io/library/busybox:1", want: "docker.io/library/busybox:1"},
		{in: "myuser/app", want: "docker.io/myuser/app:latest"},
		{in: "quay.io/podman/hello", want: "quay.io/podman/hello:latest"},
		{in: "localhost:5000/x", want: "localhost:5000/x:latest"},
		{in: "127.0.0.1:5000/a/b:v1", want: "127.0.0.1:5000/a/b:v1"},
		{in: "busybox@" + testDigest, want: "docker.io/library/busybox@" + testDigest},
		{in: "busybox:1.28@" + testDigest, want: "docker.io/library/busybox:1.28@" + testDigest},
		{in: "", wantErr: true},
		{in: "BusyBox", wantErr: true},
		{in: "busybox:", wantErr: true},
		{in: "docker://busybox", wantErr: true},
		{in: "busybox@sha256:abc", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := NormalizeName(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("NormalizeName(%q) = %q, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("NormalizeName(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	cfg := v1.ImageConfig{
		Entrypoint:   []string{"/bin/entry"},
		Cmd:          []string{"serve", "--port=80"},
		Env:          []string{"PATH=/bin", "A=b"},
		WorkingDir:   "/srv",
		User:         "65534:65534",
		StopSignal:   "SIGQUIT",
		ExposedPorts: map[string]struct{}{"80/tcp": {}},
		Labels:       map[string]string{"k": "v"},
	}
	for _, format := range []string{archive.DockerArchive, archive.OCIArchive} {
		t.Run(format, func(t *testing.T) {
			s := newStore(t)
			path := writeImage(t, format, "example.com/team/app:v1", cfg,
				dirLayer(t, map[string]string{"etc/hello": "hello\n", "bin/entry": "#!/bin/sh\n", "srv/": ""}))
			if got, err := DetectArchiveFormat(path); err != nil || got != format {
				t.Fatalf("DetectArchiveFormat = %q, %v; want %q", got, err, format)
			}
			var progress bytes.Buffer
			imgs, err := s.Load(context.Background(), path, "", &progress)
			if err != nil {
				t.Fatal(err)
			}
			if len(imgs) != 1 {
				t.Fatalf("got %d images", len(imgs))
			}
			img := imgs[0]
			if !slices.Equal(img.Names, []string{"example.com/team/app:v1"}) {
				t.Errorf("Names = %v", img.Names)
			}
			if !strings.HasPrefix(img.ID, "sha256:") || !strings.HasPrefix(img.Digest, "sha256:") || len(img.Layers) != 1 {
				t.Errorf("ID %q Digest %q Layers %v", img.ID, img.Digest, img.Layers)
			}
			if img.OS != "linux" || img.Architecture != runtime.GOARCH || img.Created.IsZero() {
				t.Errorf("platform %s/%s created %v", img.OS, img.Architecture, img.Created)
			}
			if img.Size <= 0 {
				t.Errorf("Size = %d", img.Size)
			}
			if !slices.Equal(img.Config.Entrypoint, cfg.Entrypoint) || !slices.Equal(img.Config.Cmd, cfg.Cmd) ||
				!slices.Equal(img.Config.Env, cfg.Env) || img.Config.WorkingDir != "/srv" || img.Config.User != cfg.User ||
				img.Config.StopSignal != "SIGQUIT" || len(img.Config.ExposedPorts) != 1 || img.Config.Labels["k"] != "v" {
				t.Errorf("Config = %+v", img.Config)
			}
			if !strings.Contains(progress.String(), "Copying blob sha256:") || !strings.Contains(progress.String(), " done ") {
				t.Errorf("progress output lacks plain blob lines:\n%s", progress.String())
			}

			dirs, err := s.LayerDirs(img)
			if err != nil {
				t.Fatal(err)
			}
			if len(dirs) != 1 || !filepath.IsAbs(dirs[0]) || readFile(t, filepath.Join(dirs[0], "etc/hello")) != "hello\n" {
				t.Errorf("layer dirs %v", dirs)
			}
			if size, err := diskUsage(dirs[0]); err != nil || size != img.Size {
				t.Errorf("Size %d, layer dir measures %d (%v)", img.Size, size, err)
			}

			for _, ref := range []string{"example.com/team/app:v1", img.ID, strings.TrimPrefix(img.ID, "sha256:")[:12],
				"sha256:" + strings.TrimPrefix(img.ID, "sha256:")[:8], "example.com/team/app@" + img.Digest} {
				got, err := s.Lookup(ref)
				if err != nil || got.ID != img.ID {
					t.Errorf("Lookup(%q) = %v, %v", ref, got, err)
				}
			}
			for _, ref := range []string{"example.com/team/app:v2", "app:v1", "fff000", "example.com/team/other@" + img.Digest} {
				if _, err := s.Lookup(ref); !errors.Is(err, ErrNotFound) {
					t.Errorf("Lookup(%q) error = %v, want ErrNotFound", ref, err)
				}
			}
			list, err := s.List()
			if err != nil || len(list) != 1 || list[0].ID != img.ID {
				t.Errorf("List = %v, %v", list, err)
			}
			if left := listDir(t, s.tmpDir()); len(left) != 0 {
				t.Errorf("tmp/ not empty after load: %v", left)
			}
		})
	}
}

func TestLoadNames(t *testing.T) {
	layer := tarLayer(t, tarEntry{name: "f", body: "x"})
	t.Run("tag renames", func(t *testing.T) {
		s := newStore(t)
		img := loadOne(t, s, writeImage(t, archive.DockerArchive, "busybox:1.28", v1.ImageConfig{}, layer), "mybox")
		if !slices.Equal(img.Names, []string{"docker.io/library/mybox:latest"}) {
			t.Errorf("Names = %v", img.Names)
		}
	})
	for _, format := range []string{archive.DockerArchive, archive.OCIArchive} {
		t.Run("unnamed "+format, func(t *testing.T) {
			s := newStore(t)
			img := loadOne(t, s, writeImage(t, format, "", v1.ImageConfig{}, layer), "")
			if len(img.Names) != 0 {
				t.Errorf("Names = %v, want none", img.Names)
			}
			if got, err := s.Lookup(img.ID[7:19]); err != nil || got.ID != img.ID {
				t.Errorf("Lookup by ID prefix: %v, %v", got, err)
			}
		})
	}
	t.Run("name moves to the newest image", func(t *testing.T) {
		s := newStore(t)
		a := loadOne(t, s, writeImage(t, archive.DockerArchive, "app:1", v1.ImageConfig{}, layer), "")
		b := loadOne(t, s, writeImage(t, archive.DockerArchive, "app:1", v1.ImageConfig{}, tarLayer(t, tarEntry{name: "g"})), "")
		if a.ID == b.ID {
			t.Fatal("images should differ")
		}
		if got, err := s.Lookup("app:1"); err != nil || got.ID != b.ID {
			t.Errorf("app:1 = %v, %v; want the second image", got, err)
		}
		old, err := s.Lookup(a.ID)
		if err != nil || len(old.Names) != 0 {
			t.Errorf("first image = %+v, %v; want it kept without names", old, err)
		}
	})
	t.Run("same image twice merges names", func(t *testing.T) {
		s := newStore(t)
		path := writeImage(t, archive.DockerArchive, "app:1", v1.ImageConfig{}, layer)
		loadOne(t, s, path, "")
		img := loadOne(t, s, path, "app:2")
		if !slices.Equal(img.Names, []string{"docker.io/library/app:1", "docker.io/library/app:2"}) {
			t.Errorf("Names = %v", img.Names)
		}
		if list, _ := s.List(); len(list) != 1 {
			t.Errorf("List has %d images", len(list))
		}
	})
	t.Run("bad tags", func(t *testing.T) {
		s := newStore(t)
		path := writeImage(t, archive.DockerArchive, "app:1", v1.ImageConfig{}, layer)
		for _, tag := range []string{"Bad", "app@" + testDigest} {
			if _, err := s.Load(context.Background(), path, tag, nil); err == nil {
				t.Errorf("Load with tag %q succeeded", tag)
			}
		}
	})
	t.Run("not an archive", func(t *testing.T) {
		s := newStore(t)
		bad := filepath.Join(t.TempDir(), "x.tar")
		if err := os.WriteFile(bad, mkTar(t, tarEntry{name: "hello"}), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(context.Background(), bad, "", nil); err == nil || !strings.Contains(err.Error(), "neither a docker-archive") {
			t.Errorf("Load of a plain tar: %v", err)
		}
	})
}

// Two images with a common base layer share one unpacked directory.
func TestLayerSharing(t *testing.T) {
	s := newStore(t)
	base := tarLayer(t, tarEntry{name: "base", body: strings.Repeat("b", 100000)})
	a := loadOne(t, s, writeImage(t, archive.DockerArchive, "a:1", v1.ImageConfig{}, base, tarLayer(t, tarEntry{name: "a", body: "a"})), "")
	dirsA, err := s.LayerDirs(a)
	if err != nil {
		t.Fatal(err)
	}
	var before unix.Stat_t
	if err := unix.Stat(dirsA[0], &before); err != nil {
		t.Fatal(err)
	}
	unpacked := unpackedLayers.Load()
	var progress bytes.Buffer
	imgs, err := s.Load(context.Background(), writeImage(t, archive.OCIArchive, "b:1", v1.ImageConfig{}, base, tarLayer(t, tarEntry{name: "b", body: "b"})), "", &progress)
	if err != nil {
		t.Fatal(err)
	}
	b := imgs[0]
	if n := unpackedLayers.Load() - unpacked; n != 1 {
		t.Errorf("loading b unpacked %d layers, want 1 (the base is shared)", n)
	}
	dirsB, err := s.LayerDirs(b)
	if err != nil {
		t.Fatal(err)
	}
	if a.Layers[0] != b.Layers[0] || dirsA[0] != dirsB[0] || dirsA[1] == dirsB[1] {
		t.Fatalf("layers a %v b %v", dirsA, dirsB)
	}
	var after unix.Stat_t
	if err := unix.Stat(dirsB[0], &after); err != nil {
		t.Fatal(err)
	}
	if before.Ino != after.Ino || before.Ctim != after.Ctim {
		t.Error("the base layer directory was replaced")
	}
	if got := len(listDir(t, filepath.Join(s.Root(), dirLayers))); got != 3 {
		t.Errorf("layers/ has %d entries, want 3", got)
	}
}

// A second layer deleting a file and making a directory opaque hides them in the rootfs.
func TestWhiteouts(t *testing.T) {
	s := newStore(t)
	base := dirLayer(t, map[string]string{
		"a/file1": "1", "a/keep": "k", "b/x": "x", "b/sub/y": "y", "c": "c", "d/e": "e",
	})
	top := dirLayer(t, map[string]string{
		".wh.c": "", "a/.wh.file1": "", "b/.wh..wh..opq": "", "b/new": "n", ".wh.d": "",
	})
	img := loadOne(t, s, writeImage(t, archive.OCIArchive, "wh:1", v1.ImageConfig{}, base, top), "")
	dirs, err := s.LayerDirs(img)
	if err != nil {
		t.Fatal(err)
	}
	// The top layer holds overlayfs whiteouts, not the .wh. files.
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dirs[1], "c"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("c in the top layer: mode %o rdev %d err %v; want a 0/0 character device", st.Mode, st.Rdev, err)
	}
	buf := make([]byte, 8)
	if n, err := unix.Lgetxattr(filepath.Join(dirs[1], "b"), "trusted.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
		t.Errorf("b opaque xattr = %q, %v", buf[:n], err)
	}
	if _, err := os.Lstat(filepath.Join(dirs[1], "b/.wh..wh..opq")); !os.IsNotExist(err) {
		t.Errorf("the opaque marker file was written: %v", err)
	}

	root := mountImage(t, s, img)
	for _, gone := range []string{"c", "d", "a/file1", "b/x", "b/sub"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is visible in the rootfs (%v)", gone, err)
		}
	}
	if got := listDir(t, filepath.Join(root, "b")); !slices.Equal(got, []string{"new"}) {
		t.Errorf("b/ = %v, want [new]", got)
	}
	if readFile(t, filepath.Join(root, "a/keep")) != "k" {
		t.Error("a/keep lost")
	}
	// The rootfs is writable, and writes land in the upper dir only.
	if err := os.WriteFile(filepath.Join(root, "a/keep"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(dirs[0], "a/keep")) != "k" {
		t.Error("a write through the rootfs changed the shared layer")
	}
}

// A layer tar that tries to write or link outside its directory is rejected or contained.
func TestMaliciousLayers(t *testing.T) {
	up := strings.Repeat("../", 30)
	// Each case gets a fresh directory outside the store, holding one file, victim.
	tests := []struct {
		name    string
		entries func(outside, victim string) []tarEntry
	}{
		{"dot-dot path", func(outside, _ string) []tarEntry {
			return []tarEntry{{name: "../../../../escape-dotdot", body: "x"}, {name: up + outside[1:] + "/pwned", body: "x"}}
		}},
		{"absolute path", func(outside, victim string) []tarEntry {
			return []tarEntry{{name: outside + "/pwned", body: "x"}, {name: victim, body: "overwritten"}}
		}},
		{"absolute symlink then write through it", func(outside, _ string) []tarEntry {
			return []tarEntry{{name: "link", typ: '2', link: outside}, {name: "link/pwned", body: "x"}, {name: "link/victim", body: "overwritten"}}
		}},
		{"relative symlink then write through it", func(outside, _ string) []tarEntry {
			return []tarEntry{{name: "up", typ: '2', link: up + outside[1:]}, {name: "up/pwned", body: "x"}}
		}},
		{"symlink to / then nested write", func(outside, _ string) []tarEntry {
			return []tarEntry{{name: "d/", typ: '5'}, {name: "d/l", typ: '2', link: "/"}, {name: "d/l" + outside + "/pwned", body: "x"}}
		}},
		{"hard link to a host file", func(_, victim string) []tarEntry {
			return []tarEntry{{name: "hl", typ: '1', link: victim}}
		}},
		{"hard link via dot-dot", func(_, victim string) []tarEntry {
			return []tarEntry{{name: "hl", typ: '1', link: up + victim[1:]}}
		}},
		{"whiteout through a symlink", func(outside, _ string) []tarEntry {
			return []tarEntry{{name: "w", typ: '2', link: outside}, {name: "w/.wh.victim"}, {name: "w/.wh..wh..opq"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outside := t.TempDir()
			victim := filepath.Join(outside, "victim")
			if err := os.WriteFile(victim, []byte("original"), 0o644); err != nil {
				t.Fatal(err)
			}
			s := newStore(t)
			img := writeImage(t, archive.DockerArchive, "evil:1", v1.ImageConfig{}, tarLayer(t, tt.entries(outside, victim)...))
			_, loadErr := s.Load(context.Background(), img, "", nil)
			t.Logf("Load: %v", loadErr)

			if got := listDir(t, outside); !slices.Equal(got, []string{"victim"}) {
				t.Errorf("directory outside the store changed: %v", got)
			}
			var st unix.Stat_t
			if err := unix.Stat(victim, &st); err != nil || st.Nlink != 1 || readFile(t, victim) != "original" {
				t.Errorf("host file touched: nlink %d err %v", st.Nlink, err)
			}
			var xattr [8]byte
			if _, err := unix.Lgetxattr(outside, "trusted.overlay.opaque", xattr[:]); err == nil {
				t.Error("the directory outside got an opaque xattr")
			}
			// Within the store, only the layer directory holds what the tar wrote.
			storeParent := filepath.Dir(s.Root())
			if got := listDir(t, storeParent); !slices.Equal(got, []string{"images"}) {
				t.Errorf("next to the store: %v", got)
			}
			for _, d := range []string{s.Root(), filepath.Join(s.Root(), dirLayers), s.tmpDir()} {
				for _, name := range listDir(t, d) {
					if strings.Contains(name, "escape") || strings.Contains(name, "pwned") || name == "victim" {
						t.Errorf("%s/%s written outside the layer", d, name)
					}
				}
			}
			if _, err := os.Stat("/escape-dotdot"); err == nil {
				t.Error("/escape-dotdot written on the host")
				os.Remove("/escape-dotdot")
			}
		})
	}
}

// The uncompressed layer must match the diffID in the image config.
func TestDiffIDMismatch(t *testing.T) {
	s := newStore(t)
	dir := filepath.Join(t.TempDir(), "layout")
	if err := archive.WriteImage(dir, archive.OCILayout, "bad:1", archive.Image{Layers: []archive.Layer{tarLayer(t, tarEntry{name: "f", body: "real"})}}); err != nil {
		t.Fatal(err)
	}
	forgeDiffID(t, dir, "sha256:"+strings.Repeat("ab", 32))
	_, err := s.Load(context.Background(), tarDirectory(t, dir), "", nil)
	if err == nil || !strings.Contains(err.Error(), "the image config says") {
		t.Fatalf("Load with a forged diffID: %v", err)
	}
	if got := listDir(t, filepath.Join(s.Root(), dirLayers)); len(got) != 0 {
		t.Errorf("layers/ = %v, want empty", got)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("image recorded: %v", list)
	}
}

// Concurrent loads of one archive from goroutines unpack each layer once.
func TestConcurrentLoad(t *testing.T) {
	s := newStore(t)
	path := writeImage(t, archive.DockerArchive, "conc:1", v1.ImageConfig{},
		tarLayer(t, tarEntry{name: "big", body: strings.Repeat("0123456789", 400000)}),
		tarLayer(t, tarEntry{name: "small", body: "s"}))
	before := unpackedLayers.Load()
	var wg sync.WaitGroup
	ids := make([]string, 4)
	errs := make([]error, 4)
	for i := range ids {
		wg.Go(func() {
			imgs, err := s.Load(context.Background(), path, "", nil)
			errs[i] = err
			if err == nil {
				ids[i] = imgs[0].ID
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
		if ids[i] != ids[0] {
			t.Errorf("load %d stored %s, load 0 %s", i, ids[i], ids[0])
		}
	}
	if n := unpackedLayers.Load() - before; n != 2 {
		t.Errorf("unpacked %d layers, want 2", n)
	}
	if list, _ := s.List(); len(list) != 1 {
		t.Errorf("List has %d images", len(list))
	}
}

// Two processes loading one archive at once: each layer is unpacked by one of them.
func TestConcurrentLoadProcesses(t *testing.T) {
	s := newStore(t)
	path := writeImage(t, archive.DockerArchive, "conc:1", v1.ImageConfig{},
		tarLayer(t, tarEntry{name: "big", body: strings.Repeat("0123456789", 400000)}),
		tarLayer(t, tarEntry{name: "small", body: "s"}))
	results := runHelpers(t, 2, "load", s.Root(), path)
	if results[0].ID != results[1].ID {
		t.Errorf("helpers stored %s and %s", results[0].ID, results[1].ID)
	}
	if n := results[0].Unpacked + results[1].Unpacked; n != 2 {
		t.Errorf("the helpers unpacked %d layers in all, want 2", n)
	}
	if list, _ := s.List(); len(list) != 1 {
		t.Errorf("List has %d images", len(list))
	}
	if got := listDir(t, filepath.Join(s.Root(), dirLayers)); len(got) != 2 {
		t.Errorf("layers/ = %v", got)
	}
}

func TestRemove(t *testing.T) {
	s := newStore(t)
	base := tarLayer(t, tarEntry{name: "base", body: "b"})
	// One archive loaded twice: the second load only adds a name to the same image.
	archiveA := writeImage(t, archive.DockerArchive, "a:1", v1.ImageConfig{}, base, tarLayer(t, tarEntry{name: "a"}))
	a := loadOne(t, s, archiveA, "")
	b := loadOne(t, s, writeImage(t, archive.DockerArchive, "b:1", v1.ImageConfig{}, base, tarLayer(t, tarEntry{name: "b"})), "")
	loadOne(t, s, archiveA, "a:alias")
	dirsA, _ := s.LayerDirs(a)
	inUse := func(id string) bool { return id == a.ID }

	if err := s.Remove(a.ID, nil); !errors.Is(err, ErrMultipleNames) {
		t.Errorf("Remove by ID of an image with two names: %v", err)
	}
	if err := s.Remove("a:alias", inUse); err != nil {
		t.Fatalf("untagging an in-use image: %v", err)
	}
	if got, err := s.Lookup("a:1"); err != nil || !slices.Equal(got.Names, []string{"docker.io/library/a:1"}) {
		t.Fatalf("after untag: %+v, %v", got, err)
	}
	if err := s.Remove("a:1", inUse); !errors.Is(err, ErrInUse) {
		t.Fatalf("Remove of an in-use image: %v", err)
	}
	if _, err := s.Lookup("a:1"); err != nil {
		t.Fatalf("refused removal still removed: %v", err)
	}
	if err := s.Remove("a:1", func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup("a:1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup after Remove: %v", err)
	}
	if _, err := os.Stat(dirsA[1]); !os.IsNotExist(err) {
		t.Errorf("a's own layer still on disk: %v", err)
	}
	if _, err := os.Stat(s.blobPath(mustDigest(t, a.ID).String())); !os.IsNotExist(err) {
		t.Errorf("a's config blob still on disk: %v", err)
	}
	// b still works: its layers, including the shared base, are intact.
	if _, err := s.LayerDirs(b); err != nil {
		t.Errorf("b after removing a: %v", err)
	}
	if err := s.Remove("a:1", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove: %v", err)
	}
	if left := listDir(t, s.tmpDir()); len(left) != 0 {
		t.Errorf("tmp/ = %v", left)
	}
}

func TestPrune(t *testing.T) {
	s := newStore(t)
	base := tarLayer(t, tarEntry{name: "base", body: strings.Repeat("b", 50000)})
	a := loadOne(t, s, writeImage(t, archive.DockerArchive, "a:1", v1.ImageConfig{}, base, tarLayer(t, tarEntry{name: "a"})), "")
	b := loadOne(t, s, writeImage(t, archive.OCIArchive, "b:1", v1.ImageConfig{}, base, tarLayer(t, tarEntry{name: "b", body: strings.Repeat("x", 70000)})), "")

	before, err := s.DiskUsage()
	if err != nil {
		t.Fatal(err)
	}
	removed, freed, err := s.Prune(func(id string) bool { return id == a.ID })
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].ID != b.ID {
		t.Fatalf("removed %v, want b", removed)
	}
	after, err := s.DiskUsage()
	if err != nil {
		t.Fatal(err)
	}
	if want := before.Layers + before.Blobs - after.Layers - after.Blobs; freed != want || freed < 70000 {
		t.Errorf("freed %d, disk usage fell by %d", freed, want)
	}
	if _, err := s.LayerDirs(a); err != nil {
		t.Errorf("a after prune: %v", err)
	}

	// Leftovers of a crash go too, and Prune(nil) empties the store.
	junk := filepath.Join(s.tmpDir(), "layer-crashed")
	writeTree(t, junk, map[string]string{"f": "x"})
	removed, _, err = s.Prune(nil)
	if err != nil || len(removed) != 1 || removed[0].ID != a.ID {
		t.Fatalf("Prune(nil) = %v, %v", removed, err)
	}
	for _, d := range []string{filepath.Join(s.Root(), dirLayers), filepath.Join(s.blobsDir(), "sha256"), s.tmpDir()} {
		if got := listDir(t, d); len(got) != 0 {
			t.Errorf("%s = %v after pruning everything", d, got)
		}
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("List = %v", list)
	}
}

func TestLayerDirsMissingLayer(t *testing.T) {
	s := newStore(t)
	img := loadOne(t, s, writeImage(t, archive.DockerArchive, "a:1", v1.ImageConfig{}, tarLayer(t, tarEntry{name: "f"})), "")
	dirs, _ := s.LayerDirs(img)
	if err := os.RemoveAll(dirs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LayerDirs(img); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("LayerDirs with a missing layer: %v", err)
	}
}

// An oci-archive holding a multi-platform index loads the host's platform.
func TestLoadMultiArch(t *testing.T) {
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	path := filepath.Join(t.TempDir(), "index.tar")
	var imgs []archive.Image
	for _, arch := range []string{other, runtime.GOARCH} {
		imgs = append(imgs, archive.Image{Architecture: arch, Layers: []archive.Layer{tarLayer(t, tarEntry{name: "arch-" + arch})}})
	}
	if err := archive.WriteIndex(path, archive.OCIArchive, "multi:1", imgs); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	img := loadOne(t, s, path, "")
	if img.Architecture != runtime.GOARCH || !slices.Equal(img.Names, []string{"docker.io/library/multi:1"}) {
		t.Errorf("loaded %s image named %v", img.Architecture, img.Names)
	}
	dirs, err := s.LayerDirs(img)
	if err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dirs[0]); !slices.Equal(got, []string{"arch-" + runtime.GOARCH}) {
		t.Errorf("layer holds %v", got)
	}
	if got, err := s.Lookup("multi@" + img.Digest); err != nil || got.ID != img.ID {
		t.Errorf("Lookup by the index digest: %v, %v", got, err)
	}
}

// Ordinary layer content survives unpacking: ownership, modes, links, device nodes.
func TestLayerContents(t *testing.T) {
	s := newStore(t)
	img := loadOne(t, s, writeImage(t, archive.DockerArchive, "c:1", v1.ImageConfig{}, tarLayer(t,
		tarEntry{name: "bin/", typ: '5'},
		tarEntry{name: "bin/busybox", body: "binary", mode: 0o4755},
		tarEntry{name: "bin/sh", typ: '2', link: "/bin/busybox"},
		tarEntry{name: "bin/hard", typ: '1', link: "bin/busybox", mode: 0o4755}, // tar writers repeat the mode
		tarEntry{name: "dev/", typ: '5'},
		tarEntry{name: "dev/null", typ: '3', mode: 0o666},
		tarEntry{name: "home/user/", typ: '5', mode: 0o700, uid: 1000},
	)), "")
	dirs, err := s.LayerDirs(img)
	if err != nil {
		t.Fatal(err)
	}
	root := dirs[0]
	var bb, hard, null unix.Stat_t
	if err := unix.Lstat(filepath.Join(root, "bin/busybox"), &bb); err != nil || bb.Mode&0o7777 != 0o4755 {
		t.Errorf("bin/busybox mode %o, %v", bb.Mode&0o7777, err)
	}
	if err := unix.Lstat(filepath.Join(root, "bin/hard"), &hard); err != nil || hard.Ino != bb.Ino {
		t.Errorf("bin/hard is not a hard link of bin/busybox (%v)", err)
	}
	if target, err := os.Readlink(filepath.Join(root, "bin/sh")); err != nil || target != "/bin/busybox" {
		t.Errorf("bin/sh -> %q, %v", target, err)
	}
	if err := unix.Lstat(filepath.Join(root, "dev/null"), &null); err != nil || null.Mode&unix.S_IFMT != unix.S_IFCHR {
		t.Errorf("dev/null mode %o, %v", null.Mode, err)
	}
	var home unix.Stat_t
	if err := unix.Lstat(filepath.Join(root, "home/user"), &home); err != nil || home.Mode&0o777 != 0o700 || home.Uid != 1000 || home.Gid != 1000 {
		t.Errorf("home/user: mode %o owner %d:%d, %v", home.Mode&0o777, home.Uid, home.Gid, err)
	}
}
