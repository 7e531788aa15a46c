package runtime

import (
	"github.com/podrun/podrun/runtime/image"
)

// ImagesInUse reports which images the recorded pods use, for rmi and prune.
func ImagesInUse(l Layout, store *image.Store) (func(id string) bool, error) {
	recs, err := ListPods(l, "")
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, r := range recs {
		for _, ref := range specImages(r) {
			if img, err := store.Lookup(ref); err == nil {
				used[img.ID] = true
			}
		}
	}
	return func(id string) bool { return used[id] }, nil
}

func specImages(r *Record) []string {
	var out []string
	for _, c := range r.Pod.Spec.InitContainers {
		out = append(out, c.Image)
	}
	for _, c := range r.Pod.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}
