package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Remove removes the image ref names, as `docker rmi` does: by a name the image shares
// with other names, only that name goes; otherwise the image goes with its blobs and the
// layers no other image uses. It refuses (ErrInUse) when inUse reports the image's ID in
// use, and (ErrMultipleNames) to remove by ID an image that has several names.
func (s *Store) Remove(ref string, inUse func(id string) bool) error {
	l, err := s.lockExclusive()
	if err != nil {
		return err
	}
	defer l.Close()

	var garbage []string
	err = s.updateIndex(func(ix *index) error {
		rec, byName, err := ix.find(ref)
		if err != nil {
			return err
		}
		if byName != "" && len(rec.Names) > 1 {
			rec.Names = slices.DeleteFunc(rec.Names, func(n string) bool { return n == byName })
			return nil
		}
		if byName == "" && len(rec.Names) > 1 {
			return fmt.Errorf("removing image %s (%s): %w", shortID(rec.ID), strings.Join(rec.Names, ", "), ErrMultipleNames)
		}
		if inUse != nil && inUse(rec.ID) {
			return fmt.Errorf("removing image %s (%s): %w by a pod", ref, shortID(rec.ID), ErrInUse)
		}
		ix.Images = slices.DeleteFunc(ix.Images, func(r *imageRecord) bool { return r == rec })
		garbage = ix.dropUnreferenced(s, rec)
		return nil
	})
	if err != nil {
		return err
	}
	_, err = s.deleteAll(garbage)
	return err
}

// Prune removes every image inUse does not report (nil: every image), then anything in the
// store no remaining image references: layers, blobs, and leftovers of interrupted
// operations. freed is the disk space released, in bytes.
func (s *Store) Prune(inUse func(id string) bool) (removed []*Image, freed int64, err error) {
	l, err := s.lockExclusive()
	if err != nil {
		return nil, 0, err
	}
	defer l.Close()

	var garbage []string
	err = s.updateIndex(func(ix *index) error {
		var keep []*imageRecord
		for _, r := range ix.Images {
			if inUse != nil && inUse(r.ID) {
				keep = append(keep, r)
				continue
			}
			removed = append(removed, r.toImage(ix))
		}
		ix.Images = keep
		layers, blobs := ix.referenced()
		for id := range ix.Layers {
			if !layers[id] {
				delete(ix.Layers, id)
			}
		}
		// Everything on disk that no image references, including what crashed
		// operations left behind (Prune runs with no Load or Pull in progress).
		garbage = nil
		if entries, err := os.ReadDir(filepath.Join(s.root, dirLayers)); err == nil {
			for _, e := range entries {
				if !layers["sha256:"+e.Name()] {
					garbage = append(garbage, filepath.Join(s.root, dirLayers, e.Name()))
				}
			}
		}
		if entries, err := os.ReadDir(filepath.Join(s.blobsDir(), "sha256")); err == nil {
			for _, e := range entries {
				if !blobs["sha256:"+e.Name()] {
					garbage = append(garbage, filepath.Join(s.blobsDir(), "sha256", e.Name()))
				}
			}
		}
		if entries, err := os.ReadDir(s.tmpDir()); err == nil {
			for _, e := range entries {
				garbage = append(garbage, filepath.Join(s.tmpDir(), e.Name()))
			}
		}
		// Lock files of pulls and layers: nobody holds them while we hold the store
		// exclusively (they are only taken under the shared store lock).
		if entries, err := os.ReadDir(filepath.Join(s.root, dirLocks)); err == nil {
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "pull-") || strings.HasPrefix(e.Name(), "layer-") {
					garbage = append(garbage, filepath.Join(s.root, dirLocks, e.Name()))
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	freed, err = s.deleteAll(garbage)
	return removed, freed, err
}

// dropUnreferenced removes from the index the layers of rec that no remaining image uses
// and returns the paths to delete: those layers and rec's blobs no remaining image uses.
func (ix *index) dropUnreferenced(s *Store, rec *imageRecord) []string {
	layers, blobs := ix.referenced()
	var paths []string
	for _, id := range rec.Layers {
		if layers[id] {
			continue
		}
		delete(ix.Layers, id)
		if _, _, err := parseDigest(id); err == nil {
			paths = append(paths, s.layerPath(id))
		}
	}
	for _, b := range append([]string{rec.ID, rec.Manifest}, rec.Blobs...) {
		if blobs[b] {
			continue
		}
		if _, _, err := parseDigest(b); err == nil {
			paths = append(paths, s.blobPath(b))
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// deleteAll removes paths and returns the disk space they occupied. Directories are first
// renamed into tmp/, so an interrupted delete never leaves a layer that looks complete.
func (s *Store) deleteAll(paths []string) (int64, error) {
	var freed int64
	var errs []error
	for _, p := range paths {
		size, err := diskUsage(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		target := p
		if st, err := os.Lstat(p); err == nil && st.IsDir() && filepath.Dir(p) != s.tmpDir() {
			trash, err := os.MkdirTemp(s.tmpDir(), "delete-")
			if err != nil {
				errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
				continue
			}
			if err := os.Rename(p, filepath.Join(trash, "x")); err != nil {
				os.Remove(trash)
				errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
				continue
			}
			target = trash
		}
		if err := os.RemoveAll(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
			continue
		}
		freed += size
	}
	return freed, errors.Join(errs...)
}
