package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// create configmap|secret|namespace: kubectl's generators, their rules and
// messages, and the --dry-run=client -o yaml | apply -f - habit of CI scripts.
func TestCLICreateGenerators(t *testing.T) {
	e := newCLIEnv(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("conf/app.properties", "level=debug\n")
	write("conf/logo.bin", "\x89PNG\x00\xff")
	write("conf/sub/ignored", "x")
	env := write("ci.env", "\ufeff# the CI's settings\nMODE=ci\n  URL=http://x/?a=b\n\nPODRUN_TEST_FROM_ENV\n")
	get := func(args ...string) string {
		t.Helper()
		return e.must(append([]string{"get"}, args...)...).stdout
	}
	// A directory gives each regular file: text as data, other bytes as binaryData.
	if r := e.must("create", "configmap", "conf", "--from-file="+filepath.Join(dir, "conf"), "--from-literal=extra=a=b"); r.stdout != "configmap/conf created\n" {
		t.Errorf("create configmap: %q", r.stdout)
	}
	if got := get("cm", "conf", "-o", "jsonpath={.data.app\\.properties}|{.data.extra}|{.binaryData.logo\\.bin}|{.data.ignored}"); got != "level=debug\n|a=b|"+base64.StdEncoding.EncodeToString([]byte("\x89PNG\x00\xff"))+"|" {
		t.Errorf("the ConfigMap's data: %q", got)
	}
	if r := e.podrun("create", "cm", "conf", "--from-literal=a=b"); r.code != 1 || !strings.Contains(r.stderr, `failed to create configmap: configmaps "conf" already exists`) {
		t.Errorf("create of an existing ConfigMap: %s", r)
	}
	// An env file, printed for apply: nothing is created until applied.
	os.Setenv("PODRUN_TEST_FROM_ENV", "from-the-environment")
	r := e.must("create", "configmap", "settings", "--from-env-file", env, "--dry-run=client", "-o", "yaml")
	if e.podrun("get", "cm", "settings").code == 0 {
		t.Error("create --dry-run=client created the ConfigMap")
	}
	if r := e.podrunIn(r.stdout, "apply", "-f", "-"); r.code != 0 || r.stdout != "configmap/settings created\n" {
		t.Fatalf("apply of create's output: %s", r)
	}
	if got := get("cm", "settings", "-o", "jsonpath={.data.MODE}|{.data.URL}|{.data.PODRUN_TEST_FROM_ENV}"); got != "ci|http://x/?a=b|from-the-environment" {
		t.Errorf("the env file's ConfigMap: %q", got)
	}
	// Secrets: generic, tls, docker-registry; a pod reads them.
	e.must("create", "secret", "generic", "creds", "--from-literal=user=admin", "--from-file=password="+write("pw", "s3cret"))
	certFile, keyFile := selfSigned(t, dir)
	e.must("create", "secret", "tls", "web-tls", "--cert", certFile, "--key", keyFile)
	if got := get("secret", "web-tls", "-o", "jsonpath={.type} {.data.tls\\.crt}"); !strings.HasPrefix(got, "kubernetes.io/tls LS0t") {
		t.Errorf("the TLS Secret: %q", got)
	}
	e.must("create", "secret", "docker-registry", "regcred", "--docker-server=127.0.0.1:5000", "--docker-username=ci", "--docker-password=pw")
	cfg, _ := base64.StdEncoding.DecodeString(get("secret", "regcred", "-o", "jsonpath={.data.\\.dockerconfigjson}"))
	if want := `{"auths":{"127.0.0.1:5000":{"username":"ci","password":"pw","auth":"` + base64.StdEncoding.EncodeToString([]byte("ci:pw")) + `"}}}`; string(cfg) != want {
		t.Errorf("the docker config: %s, want %s", cfg, want)
	}
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command: ['sh', '-c', 'echo $USER_NAME $MODE; cat /tls/tls.key | head -1']
    env:
    - {name: USER_NAME, valueFrom: {secretKeyRef: {name: creds, key: user}}}
    - {name: MODE, valueFrom: {configMapKeyRef: {name: settings, key: MODE}}}
    volumeMounts: [{name: tls, mountPath: /tls}]
  volumes: [{name: tls, secret: {secretName: web-tls}}]
`), "--wait")
	if got := e.must("logs", "reader").stdout; got != "admin ci\n-----BEGIN EC PRIVATE KEY-----\n" {
		t.Errorf("the pod's view of the generated objects: %q", got)
	}
	// --append-hash: kubectl's name for the same data.
	if r := e.must("create", "configmap", "hashed", "--from-literal=a=1", "-o", "name"); r.stdout != "configmap/hashed\n" {
		t.Errorf("create -o name: %q", r.stdout)
	}
	if r := e.must("create", "configmap", "hashed", "--from-literal=a=1", "--append-hash"); !strings.HasPrefix(r.stdout, "configmap/hashed-") || len(r.stdout) != len("configmap/hashed-")+10+len(" created\n") {
		t.Errorf("create --append-hash: %q", r.stdout)
	}
	e.must("create", "namespace", "ci-created")
	if got := get("ns", "ci-created", "-o", "jsonpath={.status.phase}"); got != "Active" {
		t.Errorf("the created namespace: %q", got)
	}
	// kubectl's checks and messages.
	e.mustFail(
		failure{[]string{"create", "configmap"}, 2, "NAME is required"},
		failure{[]string{"create", "configmap", "x", "--from-env-file", env, "--from-literal=a=b"}, 2, "from-env-file cannot be combined with from-file or from-literal"},
		failure{[]string{"create", "configmap", "x", "--from-literal=a=1", "--from-literal=a=2"}, 1, `cannot add key "a", another key by that name already exists in Data for ConfigMap "x"`},
		failure{[]string{"create", "configmap", "x", "--from-literal==1"}, 1, "invalid literal source =1, expected key=value"},
		failure{[]string{"create", "configmap", "x", "--from-file=k=" + filepath.Join(dir, "conf")}, 1, "cannot give a key name for a directory path"},
		failure{[]string{"create", "configmap", "x", "--from-file=" + filepath.Join(dir, "none")}, 1, "error reading " + filepath.Join(dir, "none") + ": no such file or directory"},
		failure{[]string{"create", "secret", "generic", "x", "--from-literal=bad key=1"}, 1, `"bad key" is not valid key name for a Secret`},
		failure{[]string{"create", "secret", "tls", "x", "--cert", certFile, "--key", certFile}, 1, "failed to load key pair"},
		failure{[]string{"create", "secret", "docker-registry", "x"}, 2, "either --from-file or the combination of --docker-username, --docker-password and --docker-server is required"},
	)
	if e.podrun("get", "cm", "x").code == 0 {
		t.Error("a failed create created the ConfigMap")
	}
}

// selfSigned writes a self-signed ECDSA certificate and its key as PEM files.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "web"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
