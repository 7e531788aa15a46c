package runtime

import (
	"sync"
	"time"

	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/store"
)

// pullWriteEvery bounds how often a pull's progress is rewritten while its
// blobs download; a start, a finished blob and the end are written at once.
const pullWriteEvery = 250 * time.Millisecond

// pullProgress keeps the pod's image pulls in its pulls file
// (store.PodPaths.PullsFile), for `apply --wait` to show progress.
type pullProgress struct {
	paths store.PodPaths
	mu    sync.Mutex
	pulls []store.ImagePull // the latest pull of each image
	last  time.Time
	timer *time.Timer
}

func (pp *pullProgress) find(img string) *store.ImagePull {
	for i := range pp.pulls {
		if pp.pulls[i].Image == img {
			return &pp.pulls[i]
		}
	}
	return nil
}

// start records a new pull of img, replacing an earlier one.
func (pp *pullProgress) start(img string) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	p := pp.find(img)
	if p == nil {
		pp.pulls = append(pp.pulls, store.ImagePull{})
		p = &pp.pulls[len(pp.pulls)-1]
	}
	*p = store.ImagePull{Image: img, Started: time.Now()}
	pp.writeLocked()
}

// layer records a blob's progress.
func (pp *pullProgress) layer(img string, lp image.LayerProgress) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	p := pp.find(img)
	if p == nil {
		return
	}
	var l *store.PullLayer
	for i := range p.Layers {
		if p.Layers[i].Digest == lp.Digest {
			l = &p.Layers[i]
		}
	}
	if l == nil {
		p.Layers = append(p.Layers, store.PullLayer{Digest: lp.Digest})
		l = &p.Layers[len(p.Layers)-1]
	}
	l.Size, l.Offset, l.Done = lp.Size, lp.Offset, lp.Done
	if lp.Done || time.Since(pp.last) >= pullWriteEvery {
		pp.writeLocked()
	} else if pp.timer == nil {
		pp.timer = time.AfterFunc(pullWriteEvery-time.Since(pp.last), func() {
			pp.mu.Lock()
			defer pp.mu.Unlock()
			pp.writeLocked()
		})
	}
}

// finish records the end of img's pull.
func (pp *pullProgress) finish(img string, size int64, err error) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	p := pp.find(img)
	if p == nil {
		return
	}
	now := time.Now()
	p.Finished, p.Size = &now, size
	if err != nil {
		p.Error = err.Error()
	}
	pp.writeLocked()
}

func (pp *pullProgress) writeLocked() {
	if pp.timer != nil {
		pp.timer.Stop()
		pp.timer = nil
	}
	pp.last = time.Now()
	_ = store.WritePulls(pp.paths, pp.pulls) // progress only: a failed write loses nothing
}
