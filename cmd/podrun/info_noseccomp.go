//go:build !seccomp || !cgo

package main

func libseccompVersion() string { return "" }
