package store

import (
	"slices"

	"github.com/podrun/podrun/image"
)

// ImagesInUse reports which images the recorded pods use, for rmi and prune.
func ImagesInUse(l Layout, store *image.Store) (func(id string) bool, error) {
	users, err := ImageUsers(l, store)
	if err != nil {
		return nil, err
	}
	return func(id string) bool { return len(users[id]) > 0 }, nil
}

// ImageUsers maps the ID of each image the recorded pods use to those pods
// (namespace/name), so that a refused rmi can say which pods hold the image.
func ImageUsers(l Layout, store *image.Store) (map[string][]string, error) {
	recs, err := ListPods(l, "")
	if err != nil {
		return nil, err
	}
	users := map[string][]string{}
	for _, r := range recs {
		pod := r.Pod.Namespace + "/" + r.Pod.Name
		for _, ref := range specImages(r) {
			if img, err := store.Lookup(ref); err == nil && !slices.Contains(users[img.ID], pod) {
				users[img.ID] = append(users[img.ID], pod)
			}
		}
	}
	return users, nil
}

func specImages(r *Record) []string {
	var out []string
	for _, c := range r.Pod.Spec.InitContainers {
		out = append(out, c.Image)
	}
	for _, c := range r.Pod.Spec.Containers {
		out = append(out, c.Image)
	}
	for _, c := range r.Pod.Spec.EphemeralContainers {
		out = append(out, c.Image)
	}
	// An image volume's image is mounted while its pod exists (the
	// kubelet's image GC keeps the images of image volumes in use too).
	for _, v := range r.Pod.Spec.Volumes {
		if v.Image != nil && v.Image.Reference != "" {
			out = append(out, v.Image.Reference)
		}
	}
	return out
}
