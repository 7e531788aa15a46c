//go:build podrun_image

package image

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podrun/podrun/internal/testregistry"
	"github.com/podrun/podrun/tools/mkimage/archive"
)

// layerBlobs returns the layer blob digests of the single-image OCI archive at path.
func layerBlobs(t *testing.T, s *Store, img *Image) []string {
	t.Helper()
	ix, err := s.readIndex()
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(ix.byID(img.ID).Blobs)
}

func TestIsLoopback(t *testing.T) {
	tests := map[string]bool{
		"localhost": true, "localhost:5000": true, "127.0.0.1": true, "127.0.0.1:5000": true, "127.1.2.3:80": true,
		"[::1]:5000": true, "::1": true,
		"docker.io": false, "quay.io:443": false, "10.0.0.1:5000": false, "localhost.example.com": false, "[::2]:5000": false,
	}
	for host, want := range tests {
		t.Run(host, func(t *testing.T) {
			if got := isLoopback(host); got != want {
				t.Errorf("isLoopback(%q) = %v, want %v", host, got, want)
			}
		})
	}
}

func TestPull(t *testing.T) {
	reg := testregistry.Start(t, false)
	base := tarLayer(t, tarEntry{name: "base", body: strings.Repeat("base", 20000)})
	aDigest := reg.Push(t, archive.OCIArchive, writeImage(t, archive.OCIArchive, "", v1.ImageConfig{Cmd: []string{"a"}}, base, tarLayer(t, tarEntry{name: "a", body: "a"})), "test/a:1")
	reg.Push(t, archive.OCIArchive, writeImage(t, archive.OCIArchive, "", v1.ImageConfig{Cmd: []string{"b"}}, base, tarLayer(t, tarEntry{name: "b", body: "b"})), "test/b:1")

	s := newStore(t)
	var progress bytes.Buffer
	a, err := s.Pull(context.Background(), reg.Addr+"/test/a:1", PullOptions{Insecure: true, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Names, []string{reg.Addr + "/test/a:1"}) || !slices.Equal(a.Config.Cmd, []string{"a"}) || len(a.Layers) != 2 {
		t.Errorf("pulled %+v", a)
	}
	if a.Digest != aDigest {
		t.Errorf("Digest = %s, the registry has %s", a.Digest, aDigest)
	}
	if !strings.Contains(progress.String(), "Copying blob sha256:") || !strings.Contains(progress.String(), " done ") {
		t.Errorf("progress:\n%s", progress.String())
	}
	blobsA := layerBlobs(t, s, a)
	for _, b := range blobsA {
		if n := reg.BlobGets()[b]; n != 1 {
			t.Errorf("blob %s fetched %d times pulling a, want 1", b, n)
		}
	}
	if got, err := s.Lookup(reg.Addr + "/test/a@" + aDigest); err != nil || got.ID != a.ID {
		t.Errorf("Lookup by repo digest: %v, %v", got, err)
	}

	// b shares the base layer: only its own layer is downloaded.
	progress.Reset()
	unpacked := unpackedLayers.Load()
	b, err := s.Pull(context.Background(), reg.Addr+"/test/b:1", PullOptions{Insecure: true, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	blobsB := layerBlobs(t, s, b)
	if blobsB[0] != blobsA[0] {
		t.Fatalf("base blobs differ: %s %s", blobsA[0], blobsB[0])
	}
	if n := reg.BlobGets()[blobsB[0]]; n != 1 {
		t.Errorf("the shared base blob was fetched again (%d GETs in all)", n)
	}
	if n := reg.BlobGets()[blobsB[1]]; n != 1 {
		t.Errorf("b's own layer fetched %d times, want 1", n)
	}
	if n := unpackedLayers.Load() - unpacked; n != 1 {
		t.Errorf("pulling b unpacked %d layers, want 1", n)
	}
	t.Logf("progress pulling b:\n%s", progress.String())
	if !strings.Contains(progress.String(), "skipped: already exists") {
		t.Errorf("progress for b does not show the skipped base:\n%s", progress.String())
	}

	// Pulling a again (policy Always) downloads no layer.
	if _, err := s.Pull(context.Background(), reg.Addr+"/test/a:1", PullOptions{Insecure: true}); err != nil {
		t.Fatal(err)
	}
	for _, bl := range blobsA {
		if n := reg.BlobGets()[bl]; n != 1 {
			t.Errorf("re-pull fetched blob %s again (%d GETs)", bl, n)
		}
	}

	// By digest.
	byDigest, err := s.Pull(context.Background(), reg.Addr+"/test/a@"+aDigest, PullOptions{Insecure: true})
	if err != nil || byDigest.ID != a.ID || !slices.Contains(byDigest.Names, reg.Addr+"/test/a@"+aDigest) {
		t.Errorf("pull by digest: %+v, %v", byDigest, err)
	}

	t.Run("missing tag", func(t *testing.T) {
		_, err := s.Pull(context.Background(), reg.Addr+"/test/a:missing", PullOptions{Insecure: true})
		t.Logf("Pull: %v", err)
		if err == nil || !strings.Contains(err.Error(), "manifest unknown") {
			t.Errorf("error = %v, want the registry's \"manifest unknown\"", err)
		}
		if _, err := s.Lookup(reg.Addr + "/test/a:missing"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Lookup after a failed pull: %v", err)
		}
	})
	t.Run("loopback registries may use plain HTTP", func(t *testing.T) {
		if _, err := s.Pull(context.Background(), reg.Addr+"/test/a:1", PullOptions{}); err != nil {
			t.Error(err)
		}
		port := reg.Addr[strings.LastIndex(reg.Addr, ":"):]
		if _, err := s.Pull(context.Background(), "localhost"+port+"/test/a:1", PullOptions{}); err != nil {
			t.Error(err)
		}
	})
	t.Run("signature policy", func(t *testing.T) {
		policy := filepath.Join(t.TempDir(), "policy.json")
		if err := os.WriteFile(policy, []byte(`{"default":[{"type":"reject"}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := s.Pull(context.Background(), reg.Addr+"/test/a:1", PullOptions{Insecure: true, SignaturePolicyPath: policy})
		t.Logf("Pull: %v", err)
		if err == nil || !strings.Contains(err.Error(), "rejected") {
			t.Errorf("pull under a reject-all policy: %v", err)
		}
	})
	t.Run("registries.conf mirror", func(t *testing.T) {
		conf := filepath.Join(t.TempDir(), "registries.conf")
		content := fmt.Sprintf(`[[registry]]
prefix = "registry.invalid/test"
location = "registry.invalid/test"
[[registry.mirror]]
location = "%s/test"
insecure = true
`, reg.Addr)
		if err := os.WriteFile(conf, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		img, err := s.Pull(context.Background(), "registry.invalid/test/a:1", PullOptions{RegistriesConfPath: conf})
		if err != nil {
			t.Fatal(err)
		}
		if img.ID != a.ID || !slices.Contains(img.Names, "registry.invalid/test/a:1") {
			t.Errorf("pulled through the mirror: %+v", img)
		}
	})
}

func TestPullConcurrent(t *testing.T) {
	reg := testregistry.Start(t, false)
	reg.Push(t, archive.OCIArchive, writeImage(t, archive.OCIArchive, "", v1.ImageConfig{},
		tarLayer(t, tarEntry{name: "big", body: strings.Repeat("0123456789", 300000)}),
		tarLayer(t, tarEntry{name: "small", body: "s"})), "test/c:1")
	ref := reg.Addr + "/test/c:1"

	t.Run("goroutines", func(t *testing.T) {
		s := newStore(t)
		before := unpackedLayers.Load()
		var wg sync.WaitGroup
		imgs := make([]*Image, 3)
		errs := make([]error, 3)
		for i := range imgs {
			wg.Go(func() { imgs[i], errs[i] = s.Pull(context.Background(), ref, PullOptions{Insecure: true}) })
		}
		wg.Wait()
		for i := range imgs {
			if errs[i] != nil {
				t.Fatalf("pull %d: %v", i, errs[i])
			}
			if imgs[i].ID != imgs[0].ID {
				t.Errorf("pull %d got %s", i, imgs[i].ID)
			}
		}
		for _, b := range layerBlobs(t, s, imgs[0]) {
			if n := reg.BlobGets()[b]; n != 1 {
				t.Errorf("blob %s fetched %d times, want 1", b, n)
			}
		}
		if n := unpackedLayers.Load() - before; n != 2 {
			t.Errorf("unpacked %d layers, want 2", n)
		}
	})
	t.Run("processes", func(t *testing.T) {
		s := newStore(t)
		gets := reg.BlobGets()
		results := runHelpers(t, 2, "pull", s.Root(), ref)
		if results[0].ID != results[1].ID {
			t.Errorf("helpers stored %s and %s", results[0].ID, results[1].ID)
		}
		if n := results[0].Unpacked + results[1].Unpacked; n != 2 {
			t.Errorf("helpers unpacked %d layers in all, want 2", n)
		}
		img, err := s.Lookup(ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range layerBlobs(t, s, img) {
			// Each blob was fetched once by the goroutines subtest; once more here.
			if n := reg.BlobGets()[b] - gets[b]; n != 1 {
				t.Errorf("blob %s fetched %d times by the two processes, want 1", b, n)
			}
		}
	})
}

func TestPullMultiArch(t *testing.T) {
	reg := testregistry.Start(t, false)
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	path := filepath.Join(t.TempDir(), "index.tar")
	var imgs []archive.Image
	for _, arch := range []string{other, runtime.GOARCH} {
		imgs = append(imgs, archive.Image{
			Architecture: arch,
			Layers:       []archive.Layer{tarLayer(t, tarEntry{name: "arch-" + arch, body: arch})},
		})
	}
	if err := archive.WriteIndex(path, archive.OCIArchive, "", imgs); err != nil {
		t.Fatal(err)
	}
	indexDigest := reg.Push(t, archive.OCIArchive, path, "test/multi:1")

	s := newStore(t)
	img, err := s.Pull(context.Background(), reg.Addr+"/test/multi:1", PullOptions{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if img.Architecture != runtime.GOARCH || img.Digest != indexDigest {
		t.Errorf("pulled %s image with digest %s; want %s and the index digest %s", img.Architecture, img.Digest, runtime.GOARCH, indexDigest)
	}
	dirs, err := s.LayerDirs(img)
	if err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dirs[0]); !slices.Equal(got, []string{"arch-" + runtime.GOARCH}) {
		t.Errorf("layer holds %v", got)
	}
}

func TestPullAuth(t *testing.T) {
	reg := testregistry.Start(t, true)
	reg.Push(t, archive.OCIArchive, writeImage(t, archive.OCIArchive, "", v1.ImageConfig{}, tarLayer(t, tarEntry{name: "secret"})), "private/app:1")
	ref := reg.Addr + "/private/app:1"
	creds := base64.StdEncoding.EncodeToString([]byte(reg.User + ":" + reg.Pass))
	authJSON, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.Addr: map[string]string{"auth": creds}}})

	// No credentials anywhere the defaults look (an empty DOCKER_CONFIG and XDG dirs).
	empty := t.TempDir()
	t.Setenv("DOCKER_CONFIG", empty)
	t.Setenv("XDG_RUNTIME_DIR", empty)
	t.Setenv("XDG_CONFIG_HOME", empty)

	t.Run("without credentials", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Pull(context.Background(), ref, PullOptions{Insecure: true})
		t.Logf("Pull: %v", err)
		if err == nil || !(strings.Contains(err.Error(), "unauthorized") || strings.Contains(err.Error(), "authentication required")) {
			t.Errorf("error = %v, want the registry's authentication error", err)
		}
	})
	t.Run("auth file", func(t *testing.T) {
		authFile := filepath.Join(t.TempDir(), "auth.json")
		if err := os.WriteFile(authFile, authJSON, 0o600); err != nil {
			t.Fatal(err)
		}
		s := newStore(t)
		if _, err := s.Pull(context.Background(), ref, PullOptions{Insecure: true, AuthFile: authFile}); err != nil {
			t.Error(err)
		}
	})
	t.Run("docker config.json", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), authJSON, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("DOCKER_CONFIG", dir)
		s := newStore(t)
		if _, err := s.Pull(context.Background(), ref, PullOptions{Insecure: true}); err != nil {
			t.Error(err)
		}
	})
	t.Run("containers auth.json", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "containers"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "containers", "auth.json"), authJSON, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("XDG_RUNTIME_DIR", dir)
		s := newStore(t)
		if _, err := s.Pull(context.Background(), ref, PullOptions{Insecure: true}); err != nil {
			t.Error(err)
		}
	})
}

// busyboxRegistry serves the busybox test image (tools/busybox-image.sh) as
// library/busybox:1.28 from a local registry.
func busyboxRegistry(b *testing.B) *testregistry.Registry {
	b.Helper()
	out := filepath.Join(b.TempDir(), "busybox.tar")
	script, err := filepath.Abs("../tools/busybox-image.sh")
	if err != nil {
		b.Fatal(err)
	}
	if o, err := exec.Command(script, out, "busybox:1.28", "oci-archive").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, o)
	}
	reg := testregistry.Start(b, false)
	reg.Push(b, archive.OCIArchive, out, "library/busybox:1.28")
	return reg
}

// BenchmarkPullBusybox pulls the busybox test image from a local registry into an empty
// store: download, unpack, index.
func BenchmarkPullBusybox(b *testing.B) {
	reg := busyboxRegistry(b)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s, err := Open(filepath.Join(b.TempDir(), "images"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.Pull(context.Background(), reg.Addr+"/library/busybox:1.28", PullOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSkopeoCopyBusybox is the reference for BenchmarkPullBusybox: `skopeo copy` of
// the same image to a dir: (download only, no unpacking). Needs Debian's skopeo.
func BenchmarkSkopeoCopyBusybox(b *testing.B) {
	skopeo, err := exec.LookPath("skopeo")
	if err != nil {
		b.Fatalf("this benchmark needs skopeo (apt-get install skopeo): %v", err)
	}
	reg := busyboxRegistry(b)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		dst := filepath.Join(b.TempDir(), "dir")
		b.StartTimer()
		cmd := exec.Command(skopeo, "copy", "-q", "--src-tls-verify=false", "docker://"+reg.Addr+"/library/busybox:1.28", "dir:"+dst)
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, o)
		}
	}
}
