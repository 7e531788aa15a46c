// Package testregistry starts Debian's docker-registry on a loopback port for one test,
// behind a reverse proxy that records every request, so that tests can push images with
// containers/image and count what a pull downloaded. It is test support: only _test.go
// files import it.
package testregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	digest "github.com/opencontainers/go-digest"
	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/copy"
	"go.podman.io/image/v5/docker"
	dockerarchive "go.podman.io/image/v5/docker/archive"
	ociarchive "go.podman.io/image/v5/oci/archive"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/types"
	"golang.org/x/crypto/bcrypt"

	"github.com/podrun/podrun/tools/mkimage/archive"
)

// Registry is a docker-registry started for one test. Pulls under test go through the
// counting proxy (Addr); the test's own pushes and reads go straight to the registry
// (Direct), so that they are not counted.
type Registry struct {
	Addr       string // host:port of the counting proxy
	Direct     string // host:port of the registry itself
	User, Pass string // basic-auth credentials when started withAuth, else empty

	cacheDir string // blob info cache of the pushes (never the host's)

	mu       sync.Mutex
	requests []string // "METHOD /path" seen by the proxy
	rate     int64    // bytes per second of blob downloads through the proxy (0: as fast as it goes)
}

// Throttle slows blob downloads through the proxy (Addr) to bytesPerSecond, so
// that a test can see a pull in progress; 0 lifts it.
func (r *Registry) Throttle(bytesPerSecond int64) {
	r.mu.Lock()
	r.rate = bytesPerSecond
	r.mu.Unlock()
}

// slowWriter writes a response at most rate bytes per second.
type slowWriter struct {
	http.ResponseWriter
	rate int64
}

func (w slowWriter) Write(p []byte) (int, error) {
	const chunk = 16 << 10
	n := 0
	for len(p) > 0 {
		c := min(len(p), chunk)
		m, err := w.ResponseWriter.Write(p[:c])
		n += m
		if err != nil {
			return n, err
		}
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		time.Sleep(time.Duration(int64(c) * int64(time.Second) / w.rate))
		p = p[c:]
	}
	return n, nil
}

func (w slowWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// RequireTool returns the path of bin, installing Debian's pkg when it is missing; it
// fails (never skips) the test when that is impossible.
func RequireTool(tb testing.TB, bin, pkg string) string {
	tb.Helper()
	if p, err := exec.LookPath(bin); err == nil {
		return p
	}
	install := func() ([]byte, error) {
		cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", pkg)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	out, err := install()
	if err != nil {
		// The package lists may be stale or absent: refresh them once and retry.
		if upd, uerr := exec.Command("apt-get", "update").CombinedOutput(); uerr != nil {
			out = append(out, upd...)
		} else {
			out, err = install()
		}
	}
	p, lerr := exec.LookPath(bin)
	if lerr != nil {
		tb.Fatalf("these tests need Debian's %s package (apt-get install %s); installing it failed: %v\n%s", pkg, pkg, err, out)
	}
	return p
}

func freePort(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Start starts docker-registry on a free loopback port, with htpasswd auth when withAuth,
// and the counting proxy in front of it; both stop when the test ends (the registry by
// its pid).
func Start(tb testing.TB, withAuth bool) *Registry {
	tb.Helper()
	bin := RequireTool(tb, "docker-registry", "docker-registry")
	dir := tb.TempDir()
	r := &Registry{Direct: freePort(tb), cacheDir: filepath.Join(dir, "blob-info-cache")}
	auth := ""
	if withAuth {
		r.User, r.Pass = "podrun", "s3cret-pass"
		hash, err := bcrypt.GenerateFromPassword([]byte(r.Pass), bcrypt.MinCost)
		if err != nil {
			tb.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: podrun-test\n    path: %s\n", htpasswd)
	}
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
%s`, filepath.Join(dir, "data"), r.Direct, auth)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		tb.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting %s: %v", bin, err)
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-exited
	})
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + r.Direct + "/v2/")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-exited:
			tb.Fatalf("docker-registry exited: %s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("docker-registry did not start on %s: %v\n%s", r.Direct, err, logs.String())
		}
	}
	target, _ := url.Parse("http://" + r.Direct)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path)
		rate := r.rate
		r.mu.Unlock()
		if rate > 0 && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			w = slowWriter{w, rate}
		}
		proxy.ServeHTTP(w, req)
	}))
	tb.Cleanup(srv.Close)
	r.Addr = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// Push copies the archive at path (format archive.DockerArchive or archive.OCIArchive) to
// the registry as repoTag with containers/image, every platform of an index, and returns
// the digest of the manifest (or index) it pushed.
func (r *Registry) Push(tb testing.TB, format, path, repoTag string) string {
	tb.Helper()
	var (
		src types.ImageReference
		err error
	)
	switch format {
	case archive.DockerArchive:
		src, err = dockerarchive.NewReference(path, nil)
	case archive.OCIArchive:
		src, err = ociarchive.NewReference(path, "")
	default:
		tb.Fatalf("pushing %s: unsupported archive format %q", path, format)
	}
	if err != nil {
		tb.Fatal(err)
	}
	dst, err := docker.ParseReference("//" + r.Direct + "/" + repoTag)
	if err != nil {
		tb.Fatal(err)
	}
	pc, err := signature.NewPolicyContext(&signature.Policy{Default: []signature.PolicyRequirement{signature.NewPRInsecureAcceptAnything()}})
	if err != nil {
		tb.Fatal(err)
	}
	defer pc.Destroy()
	if err := os.MkdirAll(r.cacheDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	tmp := tb.TempDir()
	srcSys := &types.SystemContext{BlobInfoCacheDir: r.cacheDir, BigFilesTemporaryDir: tmp}
	// Explicit (possibly empty) credentials: never look at the host's auth files.
	dstSys := &types.SystemContext{
		DockerInsecureSkipTLSVerify: types.OptionalBoolTrue,
		BlobInfoCacheDir:            r.cacheDir,
		BigFilesTemporaryDir:        tmp,
		DockerAuthConfig:            &types.DockerAuthConfig{Username: r.User, Password: r.Pass},
	}
	m, err := copy.Image(context.Background(), pc, dst, src, &copy.Options{
		SourceCtx: srcSys, DestinationCtx: dstSys, ImageListSelection: copy.CopyAllImages,
	})
	if err != nil {
		tb.Fatalf("pushing %s to %s: %v", path, repoTag, err)
	}
	return digest.FromBytes(m).String()
}

// Get GETs path (e.g. "/v2/repo/manifests/tag") straight from the registry, with these
// Accept headers and the credentials, and fails the test unless the answer is 200.
func (r *Registry) Get(tb testing.TB, path string, accept ...string) ([]byte, http.Header) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+r.Direct+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for _, a := range accept {
		req.Header.Add("Accept", a)
	}
	if r.User != "" {
		req.SetBasicAuth(r.User, r.Pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %s %v\n%s", path, resp.Status, err, body)
	}
	return body, resp.Header
}

// Manifest is what the registry holds for a tag of a single-platform image.
type Manifest struct {
	Digest string // the manifest's digest
	Config string // config digest = the image ID
	Layers []string
	// DiffIDs from the config: the names of the unpacked layers in a store.
	DiffIDs []string
}

// Manifest reads repo:tag's manifest and config straight from the registry.
func (r *Registry) Manifest(tb testing.TB, repo, tag string) Manifest {
	tb.Helper()
	body, hdr := r.Get(tb, "/v2/"+repo+"/manifests/"+tag, v1.MediaTypeImageManifest, "application/vnd.docker.distribution.manifest.v2+json")
	var m struct {
		Config struct{ Digest string }   `json:"config"`
		Layers []struct{ Digest string } `json:"layers"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		tb.Fatalf("manifest of %s:%s: %v\n%s", repo, tag, err, body)
	}
	out := Manifest{Digest: hdr.Get("Docker-Content-Digest"), Config: m.Config.Digest}
	for _, l := range m.Layers {
		out.Layers = append(out.Layers, l.Digest)
	}
	cfgBody, _ := r.Get(tb, "/v2/"+repo+"/blobs/"+m.Config.Digest)
	var cfg v1.Image
	if err := json.Unmarshal(cfgBody, &cfg); err != nil {
		tb.Fatalf("config of %s:%s: %v\n%s", repo, tag, err, cfgBody)
	}
	for _, d := range cfg.RootFS.DiffIDs {
		out.DiffIDs = append(out.DiffIDs, d.String())
	}
	return out
}

// BlobGets counts the proxy's GETs of each blob so far, by digest.
func (r *Registry) BlobGets() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, req := range r.requests {
		if i := strings.Index(req, "/blobs/"); strings.HasPrefix(req, "GET /v2/") && i > 0 {
			out[req[i+len("/blobs/"):]]++
		}
	}
	return out
}

// Count counts the proxy's requests for exactly this path (any method).
func (r *Registry) Count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, req := range r.requests {
		if _, rp, _ := strings.Cut(req, " "); rp == path {
			n++
		}
	}
	return n
}
