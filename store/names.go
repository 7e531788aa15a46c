package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// maxFileName is the longest file name Linux file systems take (NAME_MAX).
const maxFileName = 255

// fileName fits an object name into max bytes: names that fit are kept; a
// longer one (a valid name has up to 253 characters) keeps its first part and
// ends in a hash of the whole, so distinct names stay distinct.
func fileName(name string, max int) string {
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:16]
	return name[:max-len(suffix)] + suffix
}

// NameLock is a held reservation of one object name (namespace, kind, name):
// apply holds it while it creates an object and starts its owner, delete while
// it removes it, so that two commands never act on one name at once (nerdctl's
// namestore and CRI-O's registrar do the same for container names).
type NameLock struct{ f *flock.Flock }

// lockWaitNotice is how long a waiter stays quiet before it says what it waits for.
const lockWaitNotice = time.Second

// LockName takes the reservation of namespace/kind/name, waiting for whoever
// holds it. The locks live under the run root, so taking one writes nothing
// under --root (a delete must work on a full disk).
func (l Layout) LockName(namespace, kind, name string) (*NameLock, error) {
	dir := filepath.Join(l.RunRoot, "locks", namespace, kind)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("reserving %s %s/%s: %w", kind, namespace, name, err)
	}
	f := flock.New(filepath.Join(dir, fileName(name, maxFileName-len(".lock"))+".lock"))
	// Wait in the kernel (flock), and say after a second what is being waited for.
	got := make(chan struct{})
	go func() {
		select {
		case <-got:
		case <-time.After(lockWaitNotice):
			fmt.Fprintf(os.Stderr, "waiting for another podrun command that is changing %s %s/%s\n", kind, namespace, name)
		}
	}()
	err := f.Lock()
	close(got)
	if err != nil {
		return nil, fmt.Errorf("reserving %s %s/%s: %w", kind, namespace, name, err)
	}
	return &NameLock{f: f}, nil
}

// Unlock releases the reservation.
func (n *NameLock) Unlock() {
	if n != nil {
		_ = n.f.Unlock()
	}
}
