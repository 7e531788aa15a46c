package network

import "encoding/json"

// WarmCodecs builds encoding/json's caches for the pod network state this
// package writes (see store.WarmCodecs for why).
func WarmCodecs() { _, _ = json.Marshal(&podState{}) }
