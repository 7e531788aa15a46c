// Package archive writes container image archives (docker-archive, oci-archive, or an OCI
// layout directory) from root filesystem directories or ready-made layer tars. It backs
// the mkimage tool and lets tests build small images without a registry or a daemon.
//
// Layers built from a directory keep the directory's files as they are: a file named
// `.wh.NAME` is written as an OCI whiteout for NAME and `.wh..wh..opq` marks its directory
// opaque, so multi-layer images with deletions can be built from plain directories.
package archive

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/copy"
	dockerarchive "go.podman.io/image/v5/docker/archive"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/oci/layout"
	"go.podman.io/image/v5/signature"
	storagearchive "go.podman.io/storage/pkg/archive"
	"go.podman.io/storage/pkg/idtools"
)

// Output formats.
const (
	DockerArchive = "docker-archive" // `docker save` format
	OCIArchive    = "oci-archive"    // a tar of an OCI image layout
	OCILayout     = "oci"            // an OCI image layout directory
)

// Layer is one image layer: exactly one of Dir and Tar is set.
type Layer struct {
	Dir string // a directory tree, packed as it is
	Tar []byte // an uncompressed layer tar, used byte for byte
}

// Image describes one image to write.
type Image struct {
	Layers []Layer // bottom first; at least one
	Config v1.ImageConfig
	// OS, Architecture and Variant default to linux and the running architecture.
	OS, Architecture, Variant string
	// Created defaults to $SOURCE_DATE_EPOCH when set, else the current time. When
	// $SOURCE_DATE_EPOCH is set, files packed from directories also get that mtime, so
	// the same directory always gives the same image digest.
	Created time.Time
}

// Write packs the directory rootfs as a single-layer image into out, in format
// (DockerArchive, OCIArchive or OCILayout), named tag (may be empty: an unnamed image).
func Write(rootfs, out, format, tag string, cfg v1.ImageConfig) error {
	return WriteImage(out, format, tag, Image{Layers: []Layer{{Dir: rootfs}}, Config: cfg})
}

// WriteImage writes img into out in format, named tag (may be empty).
func WriteImage(out, format, tag string, img Image) error {
	return write(out, format, tag, []Image{img}, false)
}

// WriteIndex writes a multi-platform image: an OCI image index over imgs, named tag.
// Only the OCI formats can hold an index.
func WriteIndex(out, format, tag string, imgs []Image) error {
	if format == DockerArchive {
		return errors.New("writing a multi-platform image: docker-archive cannot hold an image index; use oci-archive or oci")
	}
	return write(out, format, tag, imgs, true)
}

func write(out, format, tag string, imgs []Image, asIndex bool) error {
	switch format {
	case DockerArchive, OCIArchive, OCILayout:
	default:
		return fmt.Errorf("unknown image format %q (want %s, %s or %s)", format, DockerArchive, OCIArchive, OCILayout)
	}
	name, err := normalizeTag(tag)
	if err != nil {
		return err
	}
	if len(imgs) == 0 {
		return errors.New("writing image: no image given")
	}
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("resolving output path %s: %w", out, err)
	}
	work, err := os.MkdirTemp(filepath.Dir(outAbs), ".mkimage-")
	if err != nil {
		return fmt.Errorf("creating a work directory next to %s: %w", out, err)
	}
	defer os.RemoveAll(work)

	layoutDir := filepath.Join(work, "layout")
	// docker-archive stores layers uncompressed; OCI images usually carry gzip layers.
	compress := format != DockerArchive
	w := &layoutWriter{dir: layoutDir, compress: compress}
	if err := w.init(); err != nil {
		return err
	}
	var top v1.Descriptor
	if asIndex {
		idx := v1.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: v1.MediaTypeImageIndex}
		for i, img := range imgs {
			d, err := w.image(img)
			if err != nil {
				return fmt.Errorf("writing image %d of the index: %w", i, err)
			}
			idx.Manifests = append(idx.Manifests, d)
		}
		top, err = w.json(v1.MediaTypeImageIndex, idx)
		if err != nil {
			return err
		}
	} else {
		if len(imgs) != 1 {
			return errors.New("writing image: more than one image needs WriteIndex")
		}
		top, err = w.image(imgs[0])
		if err != nil {
			return err
		}
	}
	if name != nil {
		top.Annotations = map[string]string{v1.AnnotationRefName: name.String()}
	}
	if err := w.finish(top); err != nil {
		return err
	}

	switch format {
	case OCILayout:
		if err := os.Rename(layoutDir, outAbs); err != nil {
			return fmt.Errorf("moving the OCI layout to %s: %w", out, err)
		}
		return nil
	case OCIArchive:
		return tarDir(layoutDir, outAbs, work)
	default:
		return toDockerArchive(layoutDir, outAbs, work, name)
	}
}

func normalizeTag(tag string) (reference.NamedTagged, error) {
	if tag == "" {
		return nil, nil
	}
	named, err := reference.ParseNormalizedNamed(tag)
	if err != nil {
		return nil, fmt.Errorf("invalid image name %q: %w", tag, err)
	}
	if _, ok := named.(reference.Digested); ok {
		return nil, fmt.Errorf("invalid image name %q: an archive name cannot contain a digest", tag)
	}
	nt, ok := reference.TagNameOnly(named).(reference.NamedTagged)
	if !ok {
		return nil, fmt.Errorf("invalid image name %q: no tag", tag)
	}
	return nt, nil
}

// layoutWriter fills an OCI image layout directory.
type layoutWriter struct {
	dir      string
	compress bool
}

func (w *layoutWriter) init() error {
	if err := os.MkdirAll(filepath.Join(w.dir, v1.ImageBlobsDir, "sha256"), 0o755); err != nil {
		return fmt.Errorf("creating OCI layout %s: %w", w.dir, err)
	}
	data, _ := json.Marshal(v1.ImageLayout{Version: v1.ImageLayoutVersion})
	if err := os.WriteFile(filepath.Join(w.dir, v1.ImageLayoutFile), data, 0o644); err != nil {
		return fmt.Errorf("writing OCI layout file: %w", err)
	}
	return nil
}

func (w *layoutWriter) blobPath(d digest.Digest) string {
	return filepath.Join(w.dir, v1.ImageBlobsDir, d.Algorithm().String(), d.Encoded())
}

func (w *layoutWriter) bytes(mediaType string, data []byte) (v1.Descriptor, error) {
	d := digest.FromBytes(data)
	if err := os.WriteFile(w.blobPath(d), data, 0o644); err != nil {
		return v1.Descriptor{}, fmt.Errorf("writing blob %s: %w", d, err)
	}
	return v1.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(data))}, nil
}

func (w *layoutWriter) json(mediaType string, v any) (v1.Descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("encoding %s: %w", mediaType, err)
	}
	return w.bytes(mediaType, data)
}

// layer stores one layer blob and returns its descriptor and diffID.
func (w *layoutWriter) layer(l Layer, created *time.Time) (v1.Descriptor, digest.Digest, error) {
	var src io.Reader
	switch {
	case l.Dir != "" && l.Tar != nil:
		return v1.Descriptor{}, "", errors.New("a layer has both Dir and Tar")
	case l.Tar != nil:
		src = bytes.NewReader(l.Tar)
	case l.Dir != "":
		if st, err := os.Stat(l.Dir); err != nil || !st.IsDir() {
			return v1.Descriptor{}, "", fmt.Errorf("layer directory %s: not a directory (%v)", l.Dir, err)
		}
		rc, err := storagearchive.TarWithOptions(l.Dir, &storagearchive.TarOptions{
			Compression: storagearchive.Uncompressed,
			Timestamp:   created,
		})
		if err != nil {
			return v1.Descriptor{}, "", fmt.Errorf("packing %s: %w", l.Dir, err)
		}
		defer rc.Close()
		src = rc
	default:
		return v1.Descriptor{}, "", errors.New("a layer has neither Dir nor Tar")
	}

	tmp, err := os.CreateTemp(w.dir, "layer-")
	if err != nil {
		return v1.Descriptor{}, "", fmt.Errorf("creating layer file: %w", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	diffID := sha256.New()
	blob := sha256.New()
	counter := &countWriter{}
	blobOut := io.MultiWriter(tmp, blob, counter)
	mediaType := v1.MediaTypeImageLayer
	var gz *gzip.Writer
	var dst io.Writer = blobOut
	if w.compress {
		mediaType = v1.MediaTypeImageLayerGzip
		gz = gzip.NewWriter(blobOut)
		dst = gz
	}
	if _, err := io.Copy(io.MultiWriter(dst, diffID), src); err != nil {
		return v1.Descriptor{}, "", fmt.Errorf("writing layer: %w", err)
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return v1.Descriptor{}, "", fmt.Errorf("compressing layer: %w", err)
		}
	}
	if err := tmp.Close(); err != nil {
		return v1.Descriptor{}, "", fmt.Errorf("writing layer: %w", err)
	}
	d := digest.NewDigest(digest.SHA256, blob)
	if err := os.Rename(tmp.Name(), w.blobPath(d)); err != nil {
		return v1.Descriptor{}, "", fmt.Errorf("storing layer blob: %w", err)
	}
	return v1.Descriptor{MediaType: mediaType, Digest: d, Size: counter.n}, digest.NewDigest(digest.SHA256, diffID), nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// image writes the layers, config and manifest of img and returns the manifest descriptor.
func (w *layoutWriter) image(img Image) (v1.Descriptor, error) {
	if len(img.Layers) == 0 {
		return v1.Descriptor{}, errors.New("an image needs at least one layer")
	}
	created, reproducible, err := createdTime(img.Created)
	if err != nil {
		return v1.Descriptor{}, err
	}
	var fileTime *time.Time
	if reproducible {
		fileTime = &created
	}
	plat := v1.Platform{OS: img.OS, Architecture: img.Architecture, Variant: img.Variant}
	if plat.OS == "" {
		plat.OS = "linux"
	}
	if plat.Architecture == "" {
		plat.Architecture = runtime.GOARCH
	}
	cfg := v1.Image{
		Created:  &created,
		Platform: plat,
		Config:   img.Config,
		RootFS:   v1.RootFS{Type: "layers"},
	}
	m := v1.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: v1.MediaTypeImageManifest}
	for i, l := range img.Layers {
		desc, diffID, err := w.layer(l, fileTime)
		if err != nil {
			return v1.Descriptor{}, fmt.Errorf("layer %d: %w", i, err)
		}
		m.Layers = append(m.Layers, desc)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, diffID)
		cfg.History = append(cfg.History, v1.History{Created: &created, CreatedBy: "podrun mkimage"})
	}
	m.Config, err = w.json(v1.MediaTypeImageConfig, cfg)
	if err != nil {
		return v1.Descriptor{}, err
	}
	desc, err := w.json(v1.MediaTypeImageManifest, m)
	if err != nil {
		return v1.Descriptor{}, err
	}
	desc.Platform = &plat
	return desc, nil
}

func (w *layoutWriter) finish(top v1.Descriptor) error {
	idx := v1.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: v1.MediaTypeImageIndex, Manifests: []v1.Descriptor{top}}
	data, err := json.Marshal(idx)
	if err != nil {
		return fmt.Errorf("encoding index.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, v1.ImageIndexFile), data, 0o644); err != nil {
		return fmt.Errorf("writing index.json: %w", err)
	}
	return nil
}

// createdTime picks the image creation time; reproducible is true when it came from
// SOURCE_DATE_EPOCH (then file times are pinned too).
func createdTime(t time.Time) (created time.Time, reproducible bool, err error) {
	if !t.IsZero() {
		return t.UTC(), false, nil
	}
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		var secs int64
		if _, err := fmt.Sscan(v, &secs); err != nil {
			return time.Time{}, false, fmt.Errorf("invalid SOURCE_DATE_EPOCH %q: %w", v, err)
		}
		return time.Unix(secs, 0).UTC(), true, nil
	}
	return time.Now().UTC().Truncate(time.Second), false, nil
}

// tarDir writes the OCI layout dir as an uncompressed tar at out (atomically).
func tarDir(dir, out, work string) error {
	// Fixed entry times (as docker-archive has) keep the archive reproducible.
	epoch := time.Unix(0, 0).UTC()
	rc, err := storagearchive.TarWithOptions(dir, &storagearchive.TarOptions{
		Compression: storagearchive.Uncompressed,
		Timestamp:   &epoch,
		ChownOpts:   &idtools.IDPair{UID: 0, GID: 0},
	})
	if err != nil {
		return fmt.Errorf("packing OCI layout: %w", err)
	}
	defer rc.Close()
	tmp := filepath.Join(work, "out.tar")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return fmt.Errorf("writing oci-archive: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing oci-archive: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("moving oci-archive to %s: %w", out, err)
	}
	return nil
}

// toDockerArchive converts the OCI layout into a docker-archive with containers/image.
func toDockerArchive(layoutDir, out, work string, name reference.NamedTagged) error {
	src, err := layout.NewReference(layoutDir, "")
	if err != nil {
		return fmt.Errorf("opening OCI layout: %w", err)
	}
	tmp := filepath.Join(work, "out.tar")
	dst, err := dockerarchive.NewReference(tmp, name)
	if err != nil {
		return fmt.Errorf("creating docker-archive reference: %w", err)
	}
	pc, err := signature.NewPolicyContext(&signature.Policy{
		Default: []signature.PolicyRequirement{signature.NewPRInsecureAcceptAnything()},
	})
	if err != nil {
		return fmt.Errorf("creating signature policy: %w", err)
	}
	defer pc.Destroy()
	if _, err := copy.Image(context.Background(), pc, dst, src, &copy.Options{}); err != nil {
		return fmt.Errorf("writing docker-archive: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("moving docker-archive to %s: %w", out, err)
	}
	return nil
}
