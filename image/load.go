//go:build podrun_image

package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	dockerarchive "go.podman.io/image/v5/docker/archive"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/oci/layout"
	"go.podman.io/image/v5/pkg/compression"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/types"
	"go.podman.io/storage/pkg/archive"
)

// Archive formats Load recognises.
const (
	FormatDockerArchive = "docker-archive"
	FormatOCIArchive    = "oci-archive"
)

// containerdNameAnnotation is where containerd, nerdctl and BuildKit put the full image
// name in OCI archives (org.opencontainers.image.ref.name often holds only a tag).
const containerdNameAnnotation = "io.containerd.image.name"

// Load imports every image of a docker-archive (`docker save`) or oci-archive file, which
// may be compressed; the format is detected from the content. When tag is set, the archive
// must hold one image, which is stored under tag instead of its own names. Images without
// a name are stored unnamed (addressable by ID).
func (s *Store) Load(ctx context.Context, archivePath string, tag string, progress io.Writer) ([]*Image, error) {
	var tagName string
	if tag != "" {
		named, err := parseRef(tag)
		if err != nil {
			return nil, err
		}
		if _, ok := named.(reference.Digested); ok {
			return nil, fmt.Errorf("invalid tag %q: a loaded image cannot be named by digest", tag)
		}
		tagName = named.String()
	}
	format, err := DetectArchiveFormat(archivePath)
	if err != nil {
		return nil, err
	}
	rep := newReporter(progress, true)
	pc, err := policyContext("")
	if err != nil {
		return nil, err
	}
	defer pc.Destroy()
	storeLock, err := s.lockShared(ctx)
	if err != nil {
		return nil, err
	}
	defer storeLock.Close()

	sys := &types.SystemContext{BigFilesTemporaryDir: s.tmpDir(), BlobInfoCacheDir: s.cacheDir()}
	var imgs []*Image
	switch format {
	case FormatDockerArchive:
		imgs, err = s.loadDockerArchive(ctx, archivePath, tagName, sys, pc, rep)
	default:
		imgs, err = s.loadOCIArchive(ctx, archivePath, tagName, sys, pc, rep)
	}
	if err != nil {
		return nil, fmt.Errorf("loading %s %s: %w", format, archivePath, err)
	}
	return imgs, nil
}

// DetectArchiveFormat tells a docker-archive (it has manifest.json) from an oci-archive
// (oci-layout and index.json). Docker 25+ writes both; its manifest.json carries the names.
func DetectArchiveFormat(archivePath string) (string, error) {
	f, err := os.Open(archivePath)
	if err != nil {
		return "", fmt.Errorf("opening image archive: %w", err)
	}
	defer f.Close()
	decompress, rd, err := compression.DetectCompression(f)
	if err != nil {
		return "", fmt.Errorf("reading image archive %s: %w", archivePath, err)
	}
	var r io.Reader = f // seekable: tar skips file bodies without reading them
	if decompress != nil {
		rc, err := decompress(rd)
		if err != nil {
			return "", fmt.Errorf("decompressing image archive %s: %w", archivePath, err)
		}
		defer rc.Close()
		r = rc
	} else if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("reading image archive %s: %w", archivePath, err)
	}
	tr := tar.NewReader(r)
	oci := false
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("reading image archive %s: not a tar archive: %w", archivePath, err)
		}
		switch path.Clean(strings.TrimPrefix(hdr.Name, "./")) {
		case "manifest.json":
			return FormatDockerArchive, nil
		case v1.ImageLayoutFile, v1.ImageIndexFile:
			oci = true
		}
	}
	if oci {
		return FormatOCIArchive, nil
	}
	return "", fmt.Errorf("%s is neither a docker-archive (no manifest.json) nor an oci-archive (no index.json)", archivePath)
}

func (s *Store) loadDockerArchive(ctx context.Context, file, tagName string, sys *types.SystemContext, pc *signature.PolicyContext, rep *reporter) ([]*Image, error) {
	reader, err := dockerarchive.NewReader(sys, file)
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	groups, err := reader.List()
	if err != nil {
		return nil, err
	}
	if tagName != "" && len(groups) != 1 {
		return nil, fmt.Errorf("a tag needs an archive with exactly one image; this one has %d", len(groups))
	}
	var out []*Image
	for _, refs := range groups {
		var names []string
		for _, r := range refs {
			if dr := r.DockerReference(); dr != nil {
				names = append(names, dr.String())
			}
		}
		if tagName != "" {
			names = []string{tagName}
		}
		m, err := s.copyIn(ctx, pc, refs[0], sys, rep)
		if err != nil {
			return nil, err
		}
		img, err := s.commit(ctx, m, "", names, rep)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return out, nil
}

func (s *Store) loadOCIArchive(ctx context.Context, file, tagName string, sys *types.SystemContext, pc *signature.PolicyContext, rep *reporter) ([]*Image, error) {
	// Extract with the same confined unpacker as layers, then refuse anything but plain
	// files and directories, so no symlink in the archive can make us read host files.
	dir, err := os.MkdirTemp(s.tmpDir(), "oci-archive-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec, _, err := compression.AutoDecompress(ctxReader{ctx, f})
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	defer dec.Close()
	if err := unpackTar(dec, dir, &archive.TarOptions{NoLchown: true}); err != nil {
		return nil, fmt.Errorf("extracting: %w", err)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() && !d.IsDir() {
			return fmt.Errorf("%s in the archive is not a regular file or directory", strings.TrimPrefix(p, dir))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	list, err := layout.List(dir)
	if err != nil {
		return nil, fmt.Errorf("reading index.json: %w", err)
	}
	if len(list) == 0 {
		return nil, errors.New("index.json lists no image")
	}
	if tagName != "" && len(list) != 1 {
		return nil, fmt.Errorf("a tag needs an archive with exactly one image; this one has %d", len(list))
	}
	var out []*Image
	for _, item := range list {
		var names []string
		switch {
		case tagName != "":
			names = []string{tagName}
		default:
			if n := ociName(item.ManifestDescriptor.Annotations); n != "" {
				names = []string{n}
			}
		}
		m, err := s.copyIn(ctx, pc, item.Reference, sys, rep)
		if err != nil {
			return nil, err
		}
		img, err := s.commit(ctx, m, item.ManifestDescriptor.Digest.String(), names, rep)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return out, nil
}

// ociName picks an image name from an OCI index entry's annotations: the containerd name,
// else org.opencontainers.image.ref.name when it is a full reference (a bare tag such as
// "latest" names no repository).
func ociName(ann map[string]string) string {
	for _, key := range []string{containerdNameAnnotation, v1.AnnotationRefName} {
		v := ann[key]
		if v == "" || (key == v1.AnnotationRefName && !strings.ContainsAny(v, "/:@")) {
			continue
		}
		if n, err := NormalizeName(v); err == nil {
			return n
		}
	}
	return ""
}
