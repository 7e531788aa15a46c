package image

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/docker/config"
	"go.podman.io/image/v5/types"
)

// Auth is one registry credential.
type Auth struct {
	Username, Password string
	// From names where it came from (a pull secret), for messages.
	From string
}

// Keyring holds the credentials of a pod's image pull secrets by registry
// location, as the kubelet's credentialprovider.BasicDockerKeyring: a
// location is a host (with port) and an optional path; the host may hold
// globs (*.example.com), and longer locations match first.
type Keyring struct {
	index []string
	creds map[string][]Auth
}

// The Secret types and keys the kubelet reads pull credentials from (core/v1).
const (
	secretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	secretTypeDockercfg        = "kubernetes.io/dockercfg"
	dockerConfigJSONKey        = ".dockerconfigjson"
	dockercfgKey               = ".dockercfg"
)

// dockerConfigEntry is one registry's entry of a .dockercfg or of a
// .dockerconfigjson's "auths"; "auth" (base64 user:password) wins over the
// separate fields, as the kubelet's DockerConfigEntry.UnmarshalJSON does.
type dockerConfigEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// AddSecret adds the credentials of a pull secret of type
// kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg; a Secret of
// another type is not a pull secret and adds nothing (the kubelet's
// MakeDockerKeyring skips it the same way).
func (k *Keyring) AddSecret(name, typ string, data map[string][]byte) error {
	var entries map[string]dockerConfigEntry
	switch {
	case typ == secretTypeDockerConfigJSON && len(data[dockerConfigJSONKey]) > 0:
		var cfg struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := json.Unmarshal(data[dockerConfigJSONKey], &cfg); err != nil {
			return fmt.Errorf("image pull secret %q: %s: %w", name, dockerConfigJSONKey, err)
		}
		entries = cfg.Auths
	case typ == secretTypeDockercfg && len(data[dockercfgKey]) > 0:
		if err := json.Unmarshal(data[dockercfgKey], &entries); err != nil {
			return fmt.Errorf("image pull secret %q: %s: %w", name, dockercfgKey, err)
		}
	default:
		return nil
	}
	if k.creds == nil {
		k.creds = map[string][]Auth{}
	}
	for loc, e := range entries {
		a := Auth{Username: e.Username, Password: e.Password, From: name}
		if e.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return fmt.Errorf("image pull secret %q: the auth of %q is not base64: %w", name, loc, err)
			}
			user, pass, ok := strings.Cut(string(dec), ":")
			if !ok {
				return fmt.Errorf("image pull secret %q: the auth of %q is not user:password", name, loc)
			}
			a.Username, a.Password = user, pass
		}
		key, err := keyringKey(loc)
		if err != nil {
			continue // the kubelet logs and ignores such an entry
		}
		if _, ok := k.creds[key]; !ok {
			k.index = append(k.index, key)
		}
		k.creds[key] = append(k.creds[key], a)
	}
	// Reverse-sorted so that more specific locations match first
	// (quay.io/coreos before quay.io), as the kubelet's keyring.
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
	return nil
}

// keyringKey is a location as BasicDockerKeyring.Add stores it: no scheme,
// /v1/ and /v2/ dropped, host alone when there is no other path.
func keyringKey(loc string) (string, error) {
	u, err := parseSchemeless(loc)
	if err != nil {
		return "", err
	}
	p := u.Path
	if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
		p = p[3:]
	}
	if p != "" && p != "/" {
		return u.Host + p, nil
	}
	return u.Host, nil
}

func parseSchemeless(s string) (*url.URL, error) {
	if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
		s = "https://" + s
	}
	return url.Parse(s)
}

// defaultRegistryHost is Docker Hub's key in docker configs.
const defaultRegistryHost = "index.docker.io"

// Lookup returns the credentials for an image (any form NormalizeName takes),
// most specific location first, as BasicDockerKeyring.Lookup.
func (k *Keyring) Lookup(ref string) []Auth {
	if k == nil || len(k.index) == 0 {
		return nil
	}
	named, err := parseName(ref)
	if err != nil {
		return nil
	}
	// The kubelet looks up the repository to pull: host/path, no tag or digest.
	repo := reference.Domain(named) + "/" + reference.Path(named)
	var out []Auth
	for _, key := range k.index {
		if urlsMatch(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && reference.Domain(named) == "docker.io" {
		out = append(out, k.creds[defaultRegistryHost]...)
	}
	return out
}

// urlsMatch is the kubelet's URLsMatchStr: the same port, the same number of
// host parts each matching as a glob, and the target's path under the glob's.
func urlsMatch(glob, target string) bool {
	g, err := parseSchemeless(glob)
	if err != nil {
		return false
	}
	t, err := parseSchemeless(target)
	if err != nil {
		return false
	}
	if g.Port() != t.Port() || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	gp, tp := strings.Split(g.Hostname(), "."), strings.Split(t.Hostname(), ".")
	if len(gp) != len(tp) {
		return false
	}
	for i := range gp {
		if ok, err := filepath.Match(gp[i], tp[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// hostHasCredentials reports whether this host's auth files (the places
// containers/image reads) hold credentials for the image's registry: the
// kubelet's own keyring, tried after a pod's pull secrets.
func hostHasCredentials(sys *types.SystemContext, named reference.Named) bool {
	a, err := config.GetCredentialsForRef(sys, named)
	return err == nil && (a.Username != "" || a.IdentityToken != "")
}

// pullWithKeyring pulls as the kubelet's PullImage does with pull secrets:
// each matching credential of the secrets in turn, then the host's own (its
// auth files) when it has any for the registry; the errors of every attempt
// are returned together. Without a matching credential it is a plain pull.
func (s *Store) pullWithKeyring(ctx context.Context, named reference.Named, opts PullOptions) (*Image, error) {
	creds := opts.Keyring.Lookup(named.String())
	if len(creds) == 0 {
		return s.pull(ctx, named, opts)
	}
	var errs []error
	for _, a := range creds {
		o := opts
		o.auth = &types.DockerAuthConfig{Username: a.Username, Password: a.Password}
		img, err := s.pull(ctx, named, o)
		if err == nil {
			return img, nil
		}
		errs = append(errs, fmt.Errorf("with the credentials of secret %q: %w", a.From, err))
		if ctx.Err() != nil {
			return nil, errors.Join(errs...)
		}
	}
	o := opts
	if hostHasCredentials(o.systemContext(s, named), named) {
		img, err := s.pull(ctx, named, o)
		if err == nil {
			return img, nil
		}
		errs = append(errs, fmt.Errorf("with this host's credentials: %w", err))
	}
	return nil, errors.Join(errs...)
}
