// Package lazyregexp is a regexp compiled on first use, as the Go toolchain's
// own internal/lazyregexp: package-level patterns then cost nothing at program
// start. podrun-shim re-executes itself as every container's init, so every
// package it links must start without work.
package lazyregexp

import (
	"regexp"
	"sync"
)

// Regexp is a regexp.Regexp compiled the first time it is used.
type Regexp struct {
	str  string
	once sync.Once
	rx   *regexp.Regexp
}

// New returns a Regexp for str; it panics on first use if str does not compile.
func New(str string) *Regexp { return &Regexp{str: str} }

func (r *Regexp) re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.str) })
	return r.rx
}

func (r *Regexp) MatchString(s string) bool                { return r.re().MatchString(s) }
func (r *Regexp) FindStringSubmatch(s string) []string     { return r.re().FindStringSubmatch(s) }
func (r *Regexp) ReplaceAllString(src, repl string) string { return r.re().ReplaceAllString(src, repl) }
func (r *Regexp) String() string                           { return r.str }
