package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/podrun/podrun/internal/imageref"
	"github.com/podrun/podrun/internal/lockwait"
)

// Errors callers test with errors.Is.
var (
	ErrNotFound      = errors.New("image not found in the local store")
	ErrInUse         = errors.New("image is in use")
	ErrAmbiguous     = errors.New("image ID prefix matches several images")
	ErrMultipleNames = errors.New("image has several names; remove them by name")
)

const (
	dirBlobs  = "blobs"
	dirLayers = "layers"
	dirTmp    = "tmp"
	dirLocks  = "locks"
	indexName = "images.json"

	indexVersion = 1
	lockPoll     = 20 * time.Millisecond
)

// Store is the local image store rooted at one directory (`<--root>/images`). Its methods
// HelperName is the binary that pulls and loads images (cmd/podrun-image, built
// with the tag podrun_image, which adds pull.go, load.go and their kin to this
// package), installed next to podrun and podrun-shim, which run it.
const HelperName = "podrun-image"

// are safe for concurrent use by goroutines and by several processes.
type Store struct {
	root string
}

// Image is an image in the store.
type Image struct {
	ID      string   // config digest "sha256:..."
	Digest  string   // manifest digest (the registry's, when pulled; else of the stored manifest)
	Names   []string // normalised names (docker.io/library/busybox:1.28); empty for a dangling image
	Layers  []string // layer ids (diffIDs, "sha256:..."), bottom first
	Size    int64    // bytes on disk of its unpacked layers (st_blocks; layers shared with other images count in each)
	Created time.Time
	Config  ImageConfig

	OS, Architecture, Variant string // the image's platform
}

// Usage is the store's disk usage in bytes (allocated blocks).
type Usage struct {
	Layers int64 // unpacked layers
	Blobs  int64 // manifests, configs and compressed layer blobs
}

// Open opens (creating if needed) the store at root, e.g. /var/lib/podrun/images.
func Open(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("opening image store %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("opening image store: %w", err)
	}
	for _, d := range []string{filepath.Join(dirBlobs, "sha256"), dirLayers, dirTmp, dirLocks} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o700); err != nil {
			return nil, fmt.Errorf("opening image store: %w", err)
		}
	}
	s := &Store{root: abs}
	s.cleanTmpIfIdle()
	return s, nil
}

// Root returns the store's directory.
func (s *Store) Root() string { return s.root }

func (s *Store) blobsDir() string { return filepath.Join(s.root, dirBlobs) }
func (s *Store) tmpDir() string   { return filepath.Join(s.root, dirTmp) }

// blobPath and layerPath take digests that were validated (parseDigest, or
// a go-digest Digest in the CLI's files).
func (s *Store) blobPath(d string) string {
	algorithm, encoded, _ := strings.Cut(d, ":")
	return filepath.Join(s.root, dirBlobs, algorithm, encoded)
}

func (s *Store) layerPath(diffID string) string {
	_, encoded, _ := strings.Cut(diffID, ":")
	return filepath.Join(s.root, dirLayers, encoded)
}

func (s *Store) lockPath(name string) string { return filepath.Join(s.root, dirLocks, name) }

// cleanTmpIfIdle removes leftovers of crashed operations when nothing else uses the store.
func (s *Store) cleanTmpIfIdle() {
	l := flock.New(s.lockPath("store.lock"))
	defer l.Close()
	if ok, err := l.TryLock(); err != nil || !ok {
		return
	}
	entries, _ := os.ReadDir(s.tmpDir())
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(s.tmpDir(), e.Name()))
	}
}

// lockShared takes the store lock shared: Load and Pull hold it while they add blobs and
// layers, so Remove and Prune (exclusive) never collect what is not indexed yet.
func (s *Store) lockShared(ctx context.Context) (*flock.Flock, error) {
	l := flock.New(s.lockPath("store.lock"))
	defer lockwait.Notice(l.Path())()
	if _, err := l.TryRLockContext(ctx, lockPoll); err != nil {
		l.Close()
		return nil, fmt.Errorf("locking image store %s: %w", s.root, err)
	}
	return l, nil
}

func (s *Store) lockExclusive() (*flock.Flock, error) {
	l := flock.New(s.lockPath("store.lock"))
	stop := lockwait.Notice(l.Path())
	defer stop()
	if err := l.Lock(); err != nil {
		return nil, fmt.Errorf("locking image store %s: %w", s.root, err)
	}
	return l, nil
}

// index is the on-disk image index.
type index struct {
	Version int                     `json:"version"`
	Images  []*imageRecord          `json:"images"`
	Layers  map[string]*layerRecord `json:"layers"` // by diffID
}

type imageRecord struct {
	ID           string      `json:"id"`
	Digest       string      `json:"digest"`
	Manifest     string      `json:"manifest"` // digest of the stored (OCI) manifest blob
	Names        []string    `json:"names,omitempty"`
	Layers       []string    `json:"layers"` // diffIDs, bottom first
	Blobs        []string    `json:"blobs"`  // layer blob digests, same order
	Created      time.Time   `json:"created"`
	Config       ImageConfig `json:"config"`
	OS           string      `json:"os"`
	Architecture string      `json:"architecture"`
	Variant      string      `json:"variant,omitempty"`
	// Updated changes every time the record is written (a pull or load of it).
	Updated time.Time `json:"updated"`
}

type layerRecord struct {
	Size int64 `json:"size"`
}

func (s *Store) readIndex() (*index, error) {
	ix := &index{Version: indexVersion, Layers: map[string]*layerRecord{}}
	data, err := os.ReadFile(filepath.Join(s.root, indexName))
	if errors.Is(err, fs.ErrNotExist) {
		return ix, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading image index: %w", err)
	}
	if err := json.Unmarshal(data, ix); err != nil {
		return nil, fmt.Errorf("reading image index %s: %w", filepath.Join(s.root, indexName), err)
	}
	if ix.Version != indexVersion {
		return nil, fmt.Errorf("reading image index: version %d, this podrun reads version %d", ix.Version, indexVersion)
	}
	if ix.Layers == nil {
		ix.Layers = map[string]*layerRecord{}
	}
	return ix, nil
}

// updateIndex applies fn to the index under the index lock and writes it atomically
// unless fn fails.
func (s *Store) updateIndex(fn func(*index) error) error {
	l := flock.New(s.lockPath("index.lock"))
	stop := lockwait.Notice(l.Path())
	if err := l.Lock(); err != nil {
		stop()
		return fmt.Errorf("locking image index: %w", err)
	}
	stop()
	defer l.Unlock()
	ix, err := s.readIndex()
	if err != nil {
		return err
	}
	if err := fn(ix); err != nil {
		return err
	}
	return s.writeIndex(ix)
}

func (s *Store) writeIndex(ix *index) error {
	data, err := json.MarshalIndent(ix, "", " ")
	if err != nil {
		return fmt.Errorf("encoding image index: %w", err)
	}
	f, err := os.CreateTemp(s.root, ".images-*.json")
	if err != nil {
		return fmt.Errorf("writing image index: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing image index: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing image index: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing image index: %w", err)
	}
	if err := os.Chmod(f.Name(), 0o600); err != nil {
		return fmt.Errorf("writing image index: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(s.root, indexName)); err != nil {
		return fmt.Errorf("writing image index: %w", err)
	}
	return nil
}

func (r *imageRecord) toImage(ix *index) *Image {
	img := &Image{
		ID:           r.ID,
		Digest:       r.Digest,
		Names:        slices.Clone(r.Names),
		Layers:       slices.Clone(r.Layers),
		Created:      r.Created,
		Config:       r.Config,
		OS:           r.OS,
		Architecture: r.Architecture,
		Variant:      r.Variant,
	}
	for _, l := range r.Layers {
		if lr := ix.Layers[l]; lr != nil {
			img.Size += lr.Size
		}
	}
	return img
}

// find resolves ref to an image record. byName is the normalised name when ref matched
// one of the image's names (rather than its ID or digest).
func (ix *index) find(ref string) (rec *imageRecord, byName string, err error) {
	id := strings.TrimPrefix(ref, "sha256:")
	if len(id) == 64 && isHex(id) {
		for _, r := range ix.Images {
			if r.ID == "sha256:"+id {
				return r, "", nil
			}
		}
		return nil, "", fmt.Errorf("image %q: %w", ref, ErrNotFound)
	}
	if named, perr := parseName(ref); perr == nil {
		name := named.String()
		for _, r := range ix.Images {
			if slices.Contains(r.Names, name) {
				return r, name, nil
			}
		}
		// repo@digest also finds an image pulled by tag from that repository.
		if named.Digest != "" {
			repo := named.Name
			for _, r := range ix.Images {
				if r.Digest != named.Digest {
					continue
				}
				for _, n := range r.Names {
					if nn, err := imageref.ParseNormalized(n); err == nil && nn.Name == repo {
						return r, "", nil
					}
				}
			}
		}
	}
	// An ID prefix, as `docker images` prints it (at least 3 characters).
	if len(id) >= 3 && isHex(id) {
		var found *imageRecord
		for _, r := range ix.Images {
			if strings.HasPrefix(strings.TrimPrefix(r.ID, "sha256:"), id) {
				if found != nil && found.ID != r.ID {
					return nil, "", fmt.Errorf("image %q: %w", ref, ErrAmbiguous)
				}
				found = r
			}
		}
		if found != nil {
			return found, "", nil
		}
	}
	return nil, "", fmt.Errorf("image %q: %w", ref, ErrNotFound)
}

func (ix *index) byID(id string) *imageRecord {
	for _, r := range ix.Images {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// referenced returns the layers and blobs the index's images use.
func (ix *index) referenced() (layers, blobs map[string]bool) {
	layers, blobs = map[string]bool{}, map[string]bool{}
	for _, r := range ix.Images {
		blobs[r.ID] = true
		blobs[r.Manifest] = true
		for _, l := range r.Layers {
			layers[l] = true
		}
		for _, b := range r.Blobs {
			blobs[b] = true
		}
	}
	return layers, blobs
}

// Lookup finds an image by name (short or full, with tag or digest), by ID, or by an ID
// prefix. A missing image gives an error matching ErrNotFound.
func (s *Store) Lookup(ref string) (*Image, error) {
	ix, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	rec, _, err := ix.find(ref)
	if err != nil {
		return nil, err
	}
	return rec.toImage(ix), nil
}

// List returns every image, newest first.
func (s *Store) List() ([]*Image, error) {
	ix, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	out := make([]*Image, 0, len(ix.Images))
	for _, r := range ix.Images {
		out = append(out, r.toImage(ix))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// LayerDirs returns the absolute unpacked layer directories of img, bottom first, for
// MountRootfs.
func (s *Store) LayerDirs(img *Image) ([]string, error) {
	dirs := make([]string, 0, len(img.Layers))
	for _, l := range img.Layers {
		if _, _, err := parseDigest(l); err != nil {
			return nil, fmt.Errorf("image %s: invalid layer id %q: %w", shortID(img.ID), l, err)
		}
		p := s.layerPath(l)
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("image %s: layer %s is missing from the store (%v); pull or load the image again", shortID(img.ID), l, err)
		}
		dirs = append(dirs, p)
	}
	return dirs, nil
}

// DiskUsage measures the bytes the store's layers and blobs occupy on disk.
func (s *Store) DiskUsage() (Usage, error) {
	var u Usage
	var err error
	if u.Layers, err = diskUsage(filepath.Join(s.root, dirLayers)); err != nil {
		return u, err
	}
	if u.Blobs, err = diskUsage(s.blobsDir()); err != nil {
		return u, err
	}
	return u, nil
}

// exists reports whether p exists (a dangling symlink counts).
func exists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, fs.ErrNotExist)
}
