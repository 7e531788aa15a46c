package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// ImagePull is where one image pull of a pod stands, as the supervisor
// writes it for a waiting `apply --wait` to show (PullsFile).
type ImagePull struct {
	Image    string      `json:"image"`
	Started  time.Time   `json:"started"`
	Finished *time.Time  `json:"finished,omitempty"`
	Error    string      `json:"error,omitempty"`
	Size     int64       `json:"size,omitempty"` // the pulled image's size
	Layers   []PullLayer `json:"layers,omitempty"`
}

// PullLayer is one blob of a pull.
type PullLayer struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"` // -1: unknown
	Offset int64  `json:"offset"`
	Done   bool   `json:"done,omitempty"`
}

// PullsFile holds the pod's image pulls, the latest of each image, under the
// run root (rewritten several times a second while a pull runs: never fsynced).
func (p PodPaths) PullsFile() string { return filepath.Join(p.RunDir, "pulls.json") }

// WritePulls replaces the pod's pulls file.
func WritePulls(p PodPaths, pulls []ImagePull) error {
	data, err := json.Marshal(pulls)
	if err != nil {
		return err
	}
	return ReplaceFile(p.PullsFile(), data)
}

// ReadPulls reads the pod's pulls file (none: no pull yet).
func ReadPulls(p PodPaths) ([]ImagePull, error) {
	data, err := os.ReadFile(p.PullsFile())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ImagePull
	err = json.Unmarshal(data, &out)
	return out, err
}
