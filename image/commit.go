//go:build podrun_image

package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	digest "github.com/opencontainers/go-digest"
	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/copy"
	"go.podman.io/image/v5/manifest"
	"go.podman.io/image/v5/oci/layout"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/types"
	"golang.org/x/sync/errgroup"
)

// copyIn copies the image srcRef into the blob store with containers/image (blobs already
// present are not fetched again) and returns the stored OCI manifest. A multi-platform
// source resolves to srcSys's platform, by default this host's.
func (s *Store) copyIn(ctx context.Context, pc *signature.PolicyContext, srcRef types.ImageReference, srcSys *types.SystemContext, rep *reporter) ([]byte, error) {
	// A throwaway OCI layout receives index.json; every blob goes to the shared blob dir.
	work, err := os.MkdirTemp(s.tmpDir(), "copy-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	destRef, err := layout.NewReference(work, "image")
	if err != nil {
		return nil, err
	}
	destSys := &types.SystemContext{
		OCISharedBlobDirPath:        s.blobsDir(),
		OCIAcceptUncompressedLayers: true, // store layers as they come: never recompress
		BigFilesTemporaryDir:        s.tmpDir(),
		// containers/image's blob info cache lives in the store, not in the host's
		// /var/lib/containers/cache that podman and skopeo own.
		BlobInfoCacheDir: s.cacheDir(),
	}
	opts := &copy.Options{
		SourceCtx:             srcSys,
		DestinationCtx:        destSys,
		ImageListSelection:    copy.CopySystemImage,
		DownloadForeignLayers: true,
	}
	done := rep.attach(opts)
	m, err := copy.Image(ctx, pc, destRef, srcRef, opts)
	done()
	if err != nil {
		return nil, err
	}
	return m, nil
}

// commit unpacks the layers of the stored manifest m and records the image under names
// (which move away from any image that had them). topDigest is the manifest digest the
// source reported ("" = the stored manifest's).
func (s *Store) commit(ctx context.Context, m []byte, topDigest string, names []string, rep *reporter) (*Image, error) {
	mani, err := manifest.OCI1FromManifest(m)
	if err != nil {
		return nil, fmt.Errorf("parsing stored manifest: %w", err)
	}
	manifestDigest := digest.FromBytes(m)
	if _, err := os.Stat(s.blobPath(manifestDigest.String())); err != nil {
		return nil, fmt.Errorf("stored manifest %s is missing: %w", manifestDigest, err)
	}
	if topDigest == "" {
		topDigest = manifestDigest.String()
	}
	cfgBytes, err := os.ReadFile(s.blobPath(mani.Config.Digest.String()))
	if err != nil {
		return nil, fmt.Errorf("reading image config: %w", err)
	}
	if got := digest.FromBytes(cfgBytes); got != mani.Config.Digest {
		return nil, fmt.Errorf("image config has digest %s, the manifest says %s", got, mani.Config.Digest)
	}
	var cfg v1.Image
	if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
		return nil, fmt.Errorf("parsing image config %s: %w", mani.Config.Digest, err)
	}
	if len(cfg.RootFS.DiffIDs) != len(mani.Layers) {
		return nil, fmt.Errorf("image config lists %d layers, the manifest %d", len(cfg.RootFS.DiffIDs), len(mani.Layers))
	}
	if len(mani.Layers) == 0 {
		return nil, errors.New("image has no layers")
	}
	for _, l := range mani.Layers {
		if strings.Contains(l.MediaType, "encrypted") {
			return nil, fmt.Errorf("layer %s is encrypted (%s): not supported", l.Digest, l.MediaType)
		}
	}

	ix, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	sizes := make([]int64, len(mani.Layers))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(2, runtime.NumCPU()))
	for i, l := range mani.Layers {
		diffID := cfg.RootFS.DiffIDs[i]
		known := int64(-1)
		if lr := ix.Layers[diffID.String()]; lr != nil {
			known = lr.Size
		}
		g.Go(func() error {
			size, err := s.ensureLayer(gctx, diffID, l.Digest, known, rep)
			sizes[i] = size
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	var img *Image
	err = s.updateIndex(func(ix *index) error {
		rec := ix.byID(mani.Config.Digest.String())
		if rec == nil {
			rec = &imageRecord{ID: mani.Config.Digest.String()}
			ix.Images = append(ix.Images, rec)
		}
		rec.Digest = topDigest
		rec.Manifest = manifestDigest.String()
		rec.Layers = rec.Layers[:0]
		rec.Blobs = rec.Blobs[:0]
		for i, l := range mani.Layers {
			id := cfg.RootFS.DiffIDs[i].String()
			rec.Layers = append(rec.Layers, id)
			rec.Blobs = append(rec.Blobs, l.Digest.String())
			ix.Layers[id] = &layerRecord{Size: sizes[i]}
		}
		if cfg.Created != nil {
			rec.Created = *cfg.Created
		}
		rec.Config = ImageConfig(cfg.Config)
		rec.OS, rec.Architecture, rec.Variant = cfg.OS, cfg.Architecture, cfg.Variant
		rec.Updated = time.Now().UTC()
		for _, name := range names {
			for _, other := range ix.Images {
				if other != rec {
					other.Names = slices.DeleteFunc(other.Names, func(n string) bool { return n == name })
				}
			}
			if !slices.Contains(rec.Names, name) {
				rec.Names = append(rec.Names, name)
			}
		}
		img = rec.toImage(ix)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return img, nil
}

// cacheDir holds containers/image's blob info cache: inside the store, never
// in the host's /var/lib/containers that podman and skopeo own.
func (s *Store) cacheDir() string { return filepath.Join(s.root, "cache") }
