package main

import "k8s.io/apimachinery/pkg/runtime"

func runtimeRaw(data []byte) runtime.RawExtension { return runtime.RawExtension{Raw: data} }
