package archive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	dockerarchive "go.podman.io/image/v5/docker/archive"
	ociarchive "go.podman.io/image/v5/oci/archive"
	"go.podman.io/image/v5/oci/layout"
	"go.podman.io/image/v5/types"
)

func testRootfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("tool", filepath.Join(dir, "bin", "alias")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func imageRef(t *testing.T, format, out string) types.ImageReference {
	t.Helper()
	var ref types.ImageReference
	var err error
	switch format {
	case DockerArchive:
		ref, err = dockerarchive.ParseReference(out)
	case OCIArchive:
		ref, err = ociarchive.ParseReference(out)
	default:
		ref, err = layout.ParseReference(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestWrite(t *testing.T) {
	cfg := v1.ImageConfig{Cmd: []string{"sh"}, Env: []string{"PATH=/bin"}, WorkingDir: "/bin", StopSignal: "SIGINT"}
	for _, format := range []string{DockerArchive, OCIArchive, OCILayout} {
		t.Run(format, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "img")
			if err := Write(testRootfs(t), out, format, "busybox:1.28", cfg); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			img, err := imageRef(t, format, out).NewImage(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer img.Close()
			got, err := img.OCIConfig(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Config.Cmd, cfg.Cmd) || !slices.Equal(got.Config.Env, cfg.Env) || got.Config.WorkingDir != "/bin" ||
				got.Config.StopSignal != "SIGINT" || got.OS != "linux" || got.Architecture != runtime.GOARCH || len(got.RootFS.DiffIDs) != 1 {
				t.Errorf("config = %+v", got)
			}
			if len(img.LayerInfos()) != 1 {
				t.Errorf("layers = %v", img.LayerInfos())
			}
			if format == DockerArchive {
				r, err := dockerarchive.NewReader(nil, out)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				groups, err := r.List()
				if err != nil || len(groups) != 1 || len(groups[0]) != 1 || groups[0][0].DockerReference() == nil ||
					groups[0][0].DockerReference().String() != "docker.io/library/busybox:1.28" {
					t.Errorf("archive names = %v, %v", groups, err)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".mkimage-*")); len(left) != 0 {
				t.Errorf("work directories left behind: %v", left)
			}
		})
	}
}

// With SOURCE_DATE_EPOCH, the same tree gives the same bytes.
func TestWriteReproducible(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	for _, format := range []string{DockerArchive, OCIArchive} {
		t.Run(format, func(t *testing.T) {
			var outs [][]byte
			for range 2 {
				out := filepath.Join(t.TempDir(), "img.tar")
				if err := Write(testRootfs(t), out, format, "x:1", v1.ImageConfig{}); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				outs = append(outs, b)
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Error("two builds of the same tree differ")
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	dir := testRootfs(t)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"bad format", Write(dir, filepath.Join(t.TempDir(), "o"), "tarball", "x", v1.ImageConfig{}), "unknown image format"},
		{"bad tag", Write(dir, filepath.Join(t.TempDir(), "o"), DockerArchive, "Bad:Tag", v1.ImageConfig{}), "invalid image name"},
		{"digest tag", Write(dir, filepath.Join(t.TempDir(), "o"), DockerArchive, "x@sha256:"+strings.Repeat("a", 64), v1.ImageConfig{}), "digest"},
		{"missing rootfs", Write(filepath.Join(dir, "nope"), filepath.Join(t.TempDir(), "o"), DockerArchive, "x", v1.ImageConfig{}), "not a directory"},
		{"index as docker-archive", WriteIndex(filepath.Join(t.TempDir(), "o"), DockerArchive, "x", []Image{{Layers: []Layer{{Dir: dir}}}}), "cannot hold an image index"},
		{"no layers", WriteImage(filepath.Join(t.TempDir(), "o"), OCIArchive, "x", Image{}), "at least one layer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", tt.err, tt.want)
			}
		})
	}
}
