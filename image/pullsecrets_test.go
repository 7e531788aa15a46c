package image

import (
	"encoding/base64"
	"testing"
)

// The kubelet's keyring: the most specific location first, globs in the
// host, ports must agree, Docker Hub's key for docker.io images, auth over
// username/password, and Secrets of other types add nothing.
func TestKeyringLookup(t *testing.T) {
	var k Keyring
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(k.AddSecret("json", secretTypeDockerConfigJSON, map[string][]byte{dockerConfigJSONKey: []byte(`{"auths": {
		"registry.example.com": {"auth": "` + b64("host:pw") + `"},
		"registry.example.com/team": {"username": "team", "password": "pw", "auth": "` + b64("teamauth:pw") + `"},
		"*.mirror.example.com": {"username": "glob", "password": "pw"},
		"localhost:5000": {"username": "local", "password": "pw"},
		"https://index.docker.io/v1/": {"username": "hub", "password": "pw"}}}`)}))
	must(k.AddSecret("cfg", secretTypeDockercfg, map[string][]byte{dockercfgKey: []byte(`{"http://registry.example.com": {"username": "old", "password": "pw"}}`)}))
	must(k.AddSecret("opaque", "Opaque", map[string][]byte{dockerConfigJSONKey: []byte(`{"auths": {"opaque.example.com": {"username": "x"}}}`)}))
	users := func(ref string) []string {
		var out []string
		for _, a := range k.Lookup(ref) {
			out = append(out, a.Username)
		}
		return out
	}
	for _, tc := range []struct {
		ref  string
		want []string
	}{
		{"registry.example.com/team/app:1", []string{"teamauth", "host", "old"}},
		{"registry.example.com/other/app", []string{"host", "old"}},
		{"eu.mirror.example.com/app", []string{"glob"}},
		{"a.b.mirror.example.com/app", nil},
		{"localhost:5000/app", []string{"local"}},
		{"localhost:5001/app", nil},
		{"busybox:1.28", []string{"hub"}},
		{"docker.io/library/busybox", []string{"hub"}},
		{"opaque.example.com/app", nil},
	} {
		got := users(tc.ref)
		if len(got) != len(tc.want) {
			t.Errorf("Lookup(%s) = %v, want %v", tc.ref, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Lookup(%s) = %v, want %v", tc.ref, got, tc.want)
				break
			}
		}
	}
	if err := k.AddSecret("bad", secretTypeDockerConfigJSON, map[string][]byte{dockerConfigJSONKey: []byte(`{`)}); err == nil {
		t.Error("a secret with bad JSON was accepted")
	}
}
