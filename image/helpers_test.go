//go:build podrun_image

package image

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	digest "github.com/opencontainers/go-digest"
	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	storagearchive "go.podman.io/storage/pkg/archive"

	"github.com/podrun/podrun/tools/mkimage/archive"
)

// TestMain doubles as the helper process of the multi-process tests.
func TestMain(m *testing.M) {
	if action := os.Getenv("PODRUN_IMAGE_HELPER"); action != "" {
		os.Exit(helperMain(action))
	}
	os.Exit(m.Run())
}

// helperResult is what a helper process prints on stdout.
type helperResult struct {
	ID       string `json:"id"`
	Unpacked int64  `json:"unpacked"`
}

// helperMain loads or pulls one image into the store $HELPER_ROOT once $HELPER_GO exists
// (so that both helpers start together).
func helperMain(action string) int {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(os.Getenv("HELPER_GO")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "helper: start signal never came")
			return 3
		}
	}
	s, err := Open(os.Getenv("HELPER_ROOT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var img *Image
	switch action {
	case "load":
		var imgs []*Image
		imgs, err = s.Load(context.Background(), os.Getenv("HELPER_ARG"), "", os.Stderr)
		if err == nil {
			img = imgs[0]
		}
	case "pull":
		img, err = s.Pull(context.Background(), os.Getenv("HELPER_ARG"), PullOptions{Insecure: true, Progress: os.Stderr})
	default:
		err = fmt.Errorf("unknown helper action %q", action)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(helperResult{ID: img.ID, Unpacked: unpackedLayers.Load()})
	return 0
}

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "images"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tarEntry is one member of a hand-made layer tar.
type tarEntry struct {
	name string
	typ  byte // tar.TypeReg when 0
	body string
	link string
	mode int64
	uid  int
}

func mkTar(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, ModTime: time.Unix(1700000000, 0), Uid: e.uid, Gid: e.uid}
		if h.Typeflag == tar.TypeChar {
			h.Devmajor, h.Devminor = 1, 3
		}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeTree creates files under dir: "path" → content; a path ending in "/" is a directory.
func writeTree(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeImage writes an image archive of layers into a temp dir and returns its path.
func writeImage(t *testing.T, format, tag string, cfg v1.ImageConfig, layers ...archive.Layer) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image.tar")
	if err := archive.WriteImage(out, format, tag, archive.Image{Layers: layers, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	return out
}

func dirLayer(t *testing.T, files map[string]string) archive.Layer {
	return archive.Layer{Dir: writeTree(t, t.TempDir(), files)}
}

func tarLayer(t *testing.T, entries ...tarEntry) archive.Layer {
	return archive.Layer{Tar: mkTar(t, entries...)}
}

func loadOne(t *testing.T, s *Store, path, tag string) *Image {
	t.Helper()
	imgs, err := s.Load(context.Background(), path, tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 1 {
		t.Fatalf("Load returned %d images, want 1", len(imgs))
	}
	return imgs[0]
}

// mountImage mounts img's rootfs at a temp target and unmounts it at cleanup.
func mountImage(t *testing.T, s *Store, img *Image) string {
	t.Helper()
	dirs, err := s.LayerDirs(img)
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	upper, work, target := filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "rootfs")
	for _, d := range []string{upper, work, target} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := MountRootfs(dirs, upper, work, target); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := UnmountRootfs(target); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return target
}

func isMounted(t *testing.T, target string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == target {
			return true
		}
	}
	return false
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func listDir(t *testing.T, p string) []string {
	t.Helper()
	entries, err := os.ReadDir(p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func mustDigest(t *testing.T, s string) digest.Digest {
	t.Helper()
	d, err := digest.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runHelpers runs n copies of this test binary as helper processes doing action on the
// store at root, starts them together, and returns their results.
func runHelpers(t *testing.T, n int, action, root, arg string) []helperResult {
	t.Helper()
	goFile := filepath.Join(t.TempDir(), "go")
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	errs := make([]*bytes.Buffer, n)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PODRUN_IMAGE_HELPER="+action, "HELPER_ROOT="+root, "HELPER_ARG="+arg, "HELPER_GO="+goFile)
		outs[i], errs[i] = &bytes.Buffer{}, &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], errs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	results := make([]helperResult, n)
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, errs[i])
		}
		if err := json.Unmarshal(outs[i].Bytes(), &results[i]); err != nil {
			t.Fatalf("helper %d output %q: %v\n%s", i, outs[i], err, errs[i])
		}
		t.Logf("helper %d: %+v\n%s", i, results[i], errs[i])
	}
	return results
}

// tarDirectory packs dir into a tar file and returns its path.
func tarDirectory(t *testing.T, dir string) string {
	t.Helper()
	rc, err := storagearchive.TarWithOptions(dir, &storagearchive.TarOptions{Compression: storagearchive.Uncompressed})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := filepath.Join(t.TempDir(), "archive.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatal(err)
	}
	return out
}

// forgeDiffID rewrites the OCI layout's single image so its config claims diffID for
// the first layer.
func forgeDiffID(t *testing.T, dir, diffID string) {
	t.Helper()
	blob := func(d digest.Digest) string { return filepath.Join(dir, "blobs", "sha256", d.Encoded()) }
	put := func(v any) v1.Descriptor {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		d := digest.FromBytes(data)
		if err := os.WriteFile(blob(d), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return v1.Descriptor{Digest: d, Size: int64(len(data))}
	}
	var idx v1.Index
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "index.json"))), &idx); err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal([]byte(readFile(t, blob(idx.Manifests[0].Digest))), &m); err != nil {
		t.Fatal(err)
	}
	var cfg v1.Image
	if err := json.Unmarshal([]byte(readFile(t, blob(m.Config.Digest))), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.RootFS.DiffIDs[0] = digest.Digest(diffID)
	d := put(cfg)
	m.Config.Digest, m.Config.Size = d.Digest, d.Size
	d = put(m)
	idx.Manifests[0].Digest, idx.Manifests[0].Size = d.Digest, d.Size
	data, _ := json.Marshal(idx)
	if err := os.WriteFile(filepath.Join(dir, "index.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
