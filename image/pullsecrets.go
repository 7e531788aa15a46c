package image

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
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
	repo := named.Name // domain/path, fully qualified
	domain, _, _ := strings.Cut(repo, "/")
	var out []Auth
	for _, key := range k.index {
		if urlsMatch(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && domain == "docker.io" {
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

// keyringWire is a Keyring as `podrun-image pull --keyring-stdin` reads it: the
// lean binary (podrun-shim) hands a pod's pull secrets to the CLI's pull
// through a pipe, never through a file.
type keyringWire struct {
	Index []string          `json:"index"`
	Creds map[string][]Auth `json:"creds"`
}

// MarshalJSON encodes the keyring for `podrun-image pull --keyring-stdin`.
func (k *Keyring) MarshalJSON() ([]byte, error) {
	return json.Marshal(keyringWire{Index: k.index, Creds: k.creds})
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (k *Keyring) UnmarshalJSON(b []byte) error {
	var w keyringWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	k.index, k.creds = w.Index, w.Creds
	return nil
}
