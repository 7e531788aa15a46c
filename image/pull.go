//go:build podrun_image

package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
	digest "github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/docker/reference"
	ciimage "go.podman.io/image/v5/image"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/transports"
	"go.podman.io/image/v5/types"

	"github.com/podrun/podrun/internal/lockwait"
)

// PullOptions configure Pull.
type PullOptions struct {
	// AuthFile is a containers auth.json or docker config.json to use instead of the
	// usual places ($XDG_RUNTIME_DIR/containers/auth.json, ~/.config/containers/auth.json,
	// $DOCKER_CONFIG/config.json or ~/.docker/config.json, ~/.dockercfg).
	AuthFile string
	// Insecure allows plain HTTP and unverified TLS for this pull (registries.conf can
	// also mark single registries insecure). Registries on the loopback interface
	// (localhost, 127.0.0.0/8, ::1) are always allowed plain HTTP, as docker and
	// containerd allow them.
	Insecure bool
	// Progress receives progress output; nil means silent.
	Progress io.Writer
	// Terminal asks for progress bars; they are drawn only when Progress is also a
	// terminal. Otherwise Progress gets one plain line per blob.
	Terminal bool
	// SignaturePolicyPath overrides the host's policy.json (see the package doc).
	SignaturePolicyPath string
	// RegistriesConfPath overrides /etc/containers/registries.conf (mirrors, insecure
	// and blocked registries).
	RegistriesConfPath string
	// OnLayer, when set, gets the progress of each blob as it downloads (at most
	// every 200 ms per blob, and when it is done or skipped).
	OnLayer func(LayerProgress)
	// Keyring holds a pod's image pull secrets: their credentials for the image's
	// registry are tried first, then the host's (see pullWithKeyring).
	Keyring *Keyring

	auth *types.DockerAuthConfig // one attempt's credentials, from Keyring
}

func (o *PullOptions) systemContext(s *Store, named reference.Named) *types.SystemContext {
	sys := &types.SystemContext{
		AuthFilePath:             o.AuthFile,
		SystemRegistriesConfPath: o.RegistriesConfPath,
		DockerRegistryUserAgent:  "podrun",
		BigFilesTemporaryDir:     s.tmpDir(),
		BlobInfoCacheDir:         s.cacheDir(),
		DockerAuthConfig:         o.auth,
	}
	if o.Insecure || isLoopback(reference.Domain(named)) {
		sys.DockerInsecureSkipTLSVerify = types.OptionalBoolTrue
	}
	return sys
}

// isLoopback reports whether a registry host[:port] is on the loopback interface.
func isLoopback(hostPort string) bool {
	host := hostPort
	if h, _, err := net.SplitHostPort(hostPort); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// policyContext loads the signature policy: path if given, else the host's policy.json,
// else a default accepting anything (documented in the package doc).
func policyContext(path string) (*signature.PolicyContext, error) {
	var (
		policy *signature.Policy
		err    error
	)
	switch {
	case path != "":
		policy, err = signature.NewPolicyFromFile(path)
	case hostPolicyExists():
		policy, err = signature.DefaultPolicy(nil)
	default:
		policy = &signature.Policy{Default: []signature.PolicyRequirement{signature.NewPRInsecureAcceptAnything()}}
	}
	if err != nil {
		return nil, fmt.Errorf("loading signature policy: %w", err)
	}
	pc, err := signature.NewPolicyContext(policy)
	if err != nil {
		return nil, fmt.Errorf("loading signature policy: %w", err)
	}
	return pc, nil
}

func hostPolicyExists() bool {
	if home, err := os.UserHomeDir(); err == nil && exists(filepath.Join(home, ".config/containers/policy.json")) {
		return true
	}
	return exists("/etc/containers/policy.json")
}

// Pull fetches ref (normalised as NormalizeName does) from its registry into the store,
// downloading only the blobs the store lacks, and unpacks its new layers. A multi-platform
// image resolves to this host's platform. Concurrent pulls of one name, from goroutines or
// processes, do the work once: the others wait and return the image the first one stored.
// Errors carry the registry's message (e.g. "manifest unknown").
func (s *Store) Pull(ctx context.Context, ref string, opts PullOptions) (*Image, error) {
	named, err := parseRef(ref)
	if err != nil {
		return nil, err
	}
	name := named.String()
	img, err := s.pullWithKeyring(ctx, named, opts)
	if err != nil {
		return nil, fmt.Errorf("pulling image %s: %w", name, err)
	}
	return img, nil
}

func (s *Store) pull(ctx context.Context, named reference.Named, opts PullOptions) (*Image, error) {
	name := named.String()
	rep := newReporter(opts.Progress, opts.Terminal)
	rep.onLayer = opts.OnLayer
	sys := opts.systemContext(s, named)
	pc, err := policyContext(opts.SignaturePolicyPath)
	if err != nil {
		return nil, err
	}
	defer pc.Destroy()

	storeLock, err := s.lockShared(ctx)
	if err != nil {
		return nil, err
	}
	defer storeLock.Close()

	// Serialise pulls of one name; a waiter reuses what the holder stored.
	before, err := s.nameState(name)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(name))
	nameLock := flock.New(s.lockPath("pull-" + hex.EncodeToString(sum[:16]) + ".lock"))
	defer nameLock.Close()
	locked, err := nameLock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", nameLock.Path(), err)
	}
	if !locked {
		stop := lockwait.Notice(nameLock.Path())
		_, err := nameLock.TryLockContext(ctx, lockPoll)
		stop()
		if err != nil {
			return nil, fmt.Errorf("waiting for another pull of %s: %w", name, err)
		}
		after, err := s.nameState(name)
		if err != nil {
			return nil, err
		}
		if after != "" && after != before {
			rep.printf("Image %s was pulled by a concurrent pull\n", name)
			return s.Lookup(name)
		}
	}

	// docker:// takes a tag or a digest, not both: a digest wins, as in Kubernetes.
	pullRef := named
	var topDigest string
	if dg, ok := named.(reference.Digested); ok {
		topDigest = dg.Digest().String()
		if pullRef, err = reference.WithDigest(reference.TrimNamed(named), dg.Digest()); err != nil {
			return nil, err
		}
	}
	srcRef, err := docker.NewReference(pullRef)
	if err != nil {
		return nil, err
	}
	// Resolve the tag to the registry's manifest digest with a HEAD (which registries do
	// not count as a pull), then copy by digest so the tag cannot move in between. Skipped
	// where registries.conf redirects the repository: copy.Image handles mirrors itself.
	if topDigest == "" && !redirected(sys, name) {
		if d, err := docker.GetDigest(ctx, sys, srcRef); err == nil {
			if byDigest, err := reference.WithDigest(reference.TrimNamed(named), d); err == nil {
				if r, err := docker.NewReference(byDigest); err == nil {
					srcRef, topDigest = r, d.String()
				}
			}
		}
		// On error, copy.Image below fails too and reports the registry's message.
	}
	// The registry still serves a manifest the store holds (a re-pull of an unchanged
	// tag): once the signature policy accepts it, download no blob, not even the
	// config, as containerd does.
	if m := s.storedManifest(topDigest); m != nil {
		if err := allowed(ctx, pc, srcRef, sys); err != nil {
			return nil, err
		}
		if img, err := s.commit(ctx, m, topDigest, []string{name}, rep); err == nil {
			rep.printf("Image %s is up to date\n", name)
			return img, nil
		}
	}
	m, err := s.copyIn(ctx, pc, srcRef, sys, rep)
	if err != nil {
		return nil, err
	}
	return s.commit(ctx, m, topDigest, []string{name}, rep)
}

// allowed checks the signature policy for ref (its manifest and signatures only), as
// copy.Image does before it copies anything.
func allowed(ctx context.Context, pc *signature.PolicyContext, ref types.ImageReference, sys *types.SystemContext) error {
	src, err := ref.NewImageSource(ctx, sys)
	if err != nil {
		return fmt.Errorf("initializing source %s: %w", transports.ImageName(ref), err)
	}
	defer src.Close()
	if _, err := pc.IsRunningImageAllowed(ctx, ciimage.UnparsedInstance(src, nil)); err != nil {
		return fmt.Errorf("source image rejected: %w", err)
	}
	return nil
}

// storedManifest returns the stored manifest of the image whose registry digest is
// topDigest, or nil.
func (s *Store) storedManifest(topDigest string) []byte {
	if topDigest == "" {
		return nil
	}
	ix, err := s.readIndex()
	if err != nil {
		return nil
	}
	for _, r := range ix.Images {
		if r.Digest != topDigest {
			continue
		}
		if d, err := digest.Parse(r.Manifest); err == nil {
			if m, err := os.ReadFile(s.blobPath(d.String())); err == nil {
				return m
			}
		}
	}
	return nil
}

// nameState identifies the record that currently holds name ("" = none).
func (s *Store) nameState(name string) (string, error) {
	ix, err := s.readIndex()
	if err != nil {
		return "", err
	}
	for _, r := range ix.Images {
		for _, n := range r.Names {
			if n == name {
				return r.ID + "@" + r.Updated.String(), nil
			}
		}
	}
	return "", nil
}

// redirected reports whether registries.conf sends pulls of name elsewhere (mirrors or a
// rewritten location), where a HEAD to the named registry could fail or disagree.
func redirected(sys *types.SystemContext, name string) bool {
	reg, err := sysregistriesv2.FindRegistry(sys, name)
	if err != nil || reg == nil {
		return false
	}
	return len(reg.Mirrors) > 0 || reg.Location != reg.Prefix
}

// parseRef is parseName with go.podman.io/image's own reference types, which its
// transports take.
func parseRef(ref string) (reference.Named, error) {
	if strings.TrimSpace(ref) == "" {
		return nil, fmt.Errorf("invalid image name %q: empty", ref)
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, fmt.Errorf("invalid image name %q: %w", ref, err)
	}
	return reference.TagNameOnly(named), nil
}
