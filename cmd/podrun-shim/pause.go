package main

import "github.com/podrun/podrun/runtime"

// pause is PID 1 of a pod's shared process namespace.
func pause() error { return runtime.Pause() }
