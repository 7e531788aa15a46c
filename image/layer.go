//go:build podrun_image

package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"

	units "github.com/docker/go-units"

	"github.com/gofrs/flock"
	digest "github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/pkg/compression"
	"go.podman.io/storage/pkg/archive"
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/internal/lockwait"
)

// unpackedLayers counts layers this process has unpacked (tests check each is done once).
var unpackedLayers atomic.Int64

// ensureLayer makes sure the layer diffID is unpacked from blob into layers/<hex> and
// returns its size on disk. known is the size recorded in the index, or -1.
func (s *Store) ensureLayer(ctx context.Context, diffID, blob digest.Digest, known int64, rep *reporter) (int64, error) {
	dir := s.layerPath(diffID.String())
	if _, err := os.Stat(dir); err == nil && known >= 0 {
		return known, nil
	}
	// One unpacker per layer across goroutines and processes; the others wait and reuse.
	l := flock.New(s.lockPath("layer-" + diffID.Encoded() + ".lock"))
	defer l.Close()
	stop := lockwait.Notice(l.Path())
	_, err := l.TryLockContext(ctx, lockPoll)
	stop()
	if err != nil {
		return 0, fmt.Errorf("locking layer %s: %w", diffID, err)
	}
	if _, err := os.Stat(dir); err == nil {
		if known >= 0 {
			return known, nil
		}
		return diskUsage(dir)
	}

	tmp, err := os.MkdirTemp(s.tmpDir(), "layer-")
	if err != nil {
		return 0, fmt.Errorf("unpacking layer %s: %w", diffID, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	// The layer's root directory is the overlay's lower root: make it look like "/".
	if err := os.Chmod(tmp, 0o755); err != nil {
		return 0, fmt.Errorf("unpacking layer %s: %w", diffID, err)
	}
	if err := unpackBlob(ctx, s.blobPath(blob.String()), diffID, tmp); err != nil {
		return 0, fmt.Errorf("unpacking layer %s: %w", diffID, err)
	}
	size, err := diskUsage(tmp)
	if err != nil {
		return 0, fmt.Errorf("unpacking layer %s: %w", diffID, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return 0, fmt.Errorf("unpacking layer %s: %w", diffID, err)
	}
	ok = true
	unpackedLayers.Add(1)
	rep.printf("Unpacked layer %s %s\n", shortDigest(diffID), humanSize(size))
	return size, nil
}

// unpackBlob decompresses the blob, unpacks it into dir with overlayfs whiteouts and
// checks that the uncompressed stream has digest diffID.
func unpackBlob(ctx context.Context, blobPath string, diffID digest.Digest, dir string) error {
	if err := diffID.Validate(); err != nil {
		return fmt.Errorf("invalid diffID: %w", err)
	}
	f, err := os.Open(blobPath)
	if err != nil {
		return err
	}
	defer f.Close()
	dec, _, err := compression.AutoDecompress(ctxReader{ctx, f})
	if err != nil {
		return fmt.Errorf("decompressing %s: %w", filepath.Base(blobPath), err)
	}
	defer dec.Close()
	verifier := diffID.Algorithm().Digester()
	stream := io.TeeReader(dec, verifier.Hash())
	if err := unpackTar(stream, dir, &archive.TarOptions{WhiteoutFormat: archive.OverlayWhiteoutFormat}); err != nil {
		return err
	}
	// The tar reader stops at the end-of-archive marker; the digest covers the padding too.
	if _, err := io.Copy(io.Discard, stream); err != nil {
		return fmt.Errorf("reading layer: %w", err)
	}
	if got := verifier.Digest(); got != diffID {
		return fmt.Errorf("layer content has digest %s, the image config says %s", got, diffID)
	}
	return nil
}

// unpackTar unpacks an uncompressed tar stream into dir with containers/storage's
// archive.Unpack, on an OS thread whose root directory is dir (unshare(CLONE_FS) +
// chroot): "../", absolute paths, and symlinks or hard links pointing anywhere resolve
// inside dir, so nothing outside it can be written or linked to.
func unpackTar(r io.Reader, dir string, opts *archive.TarOptions) error {
	// Settle the sync.Once inside GetOverlayXattrName while /proc is still reachable.
	_ = archive.GetOverlayXattrName("opaque")
	errc := make(chan error, 1)
	go func() {
		// The thread's root changes, so it must never run another goroutine: staying locked
		// until this goroutine exits makes the runtime terminate the thread.
		runtime.LockOSThread()
		errc <- func() error {
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return fmt.Errorf("unshare(CLONE_FS): %w", err)
			}
			if err := unix.Chroot(dir); err != nil {
				return fmt.Errorf("chroot %s: %w", dir, err)
			}
			if err := unix.Chdir("/"); err != nil {
				return fmt.Errorf("chdir /: %w", err)
			}
			return archive.Unpack(r, "/", opts)
		}()
	}()
	err := <-errc
	// pkg/archive returns linkat(2) and mknod(2) failures as a bare errno, which alone
	// says nothing (a hard link to a file the layer lacks, e.g. one outside it, gives
	// just "no such file or directory").
	var errno syscall.Errno
	if errors.As(err, &errno) && err == error(errno) {
		return fmt.Errorf("creating a hard link or device node (its target is not in the layer?): %w", err)
	}
	return err
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func shortDigest(d digest.Digest) string {
	enc := d.Encoded()
	if len(enc) > 12 {
		enc = enc[:12]
	}
	return d.Algorithm().String() + ":" + enc
}

func humanSize(n int64) string {
	return units.CustomSize("%.1f%s", float64(n), 1024, binaryAbbrs)
}

// binaryAbbrs are go-units' binary prefixes (unexported there).
var binaryAbbrs = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
