package image

// LayerProgress is where the download of one blob of a pull stands, for a
// caller that draws its own progress (PullOptions.OnLayer).
type LayerProgress struct {
	Digest string `json:"digest"` // sha256:…
	Size   int64  `json:"size"`   // bytes, -1 when the source does not say
	Offset int64  `json:"offset"` // bytes so far
	Done   bool   `json:"done"`   // downloaded, or skipped because the store has it
}
