package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

func TestMountFlags(t *testing.T) {
	dir := newPodDir(t)
	hostDir := t.TempDir()
	pod := podWith("p", []corev1.Volume{
		emptyDirVol("scratch", corev1.EmptyDirVolumeSource{}),
		cmVol("cfg", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}),
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}},
	})
	set := mustSetup(t, pod, Options{PodDir: dir, Objects: testObjects})
	prop := func(m corev1.MountPropagationMode) *corev1.MountPropagationMode { return &m }
	rro := func(m corev1.RecursiveReadOnlyMode) *corev1.RecursiveReadOnlyMode { return &m }

	tests := []struct {
		name    string
		vm      corev1.VolumeMount
		want    Mount
		wantErr string
	}{
		{name: "default is rprivate read-write", vm: corev1.VolumeMount{Name: "scratch", MountPath: "/data"},
			want: Mount{Name: "scratch", Source: filepath.Join(dir, "volumes/scratch"), Destination: "/data", Propagation: "rprivate"}},
		{name: "None", vm: corev1.VolumeMount{Name: "scratch", MountPath: "/data", MountPropagation: prop(corev1.MountPropagationNone)},
			want: Mount{Name: "scratch", Source: filepath.Join(dir, "volumes/scratch"), Destination: "/data", Propagation: "rprivate"}},
		{name: "HostToContainer", vm: corev1.VolumeMount{Name: "host", MountPath: "/host", MountPropagation: prop(corev1.MountPropagationHostToContainer)},
			want: Mount{Name: "host", Source: hostDir, Destination: "/host", Propagation: "rslave"}},
		{name: "Bidirectional", vm: corev1.VolumeMount{Name: "host", MountPath: "/host", MountPropagation: prop(corev1.MountPropagationBidirectional)},
			want: Mount{Name: "host", Source: hostDir, Destination: "/host", Propagation: "rshared"}},
		{name: "invalid propagation", vm: corev1.VolumeMount{Name: "host", MountPath: "/host", MountPropagation: prop("Sideways")},
			wantErr: `invalid MountPropagation mode: "Sideways"`},
		{name: "configMap is read-only whatever the mount says", vm: corev1.VolumeMount{Name: "cfg", MountPath: "etc/app/"},
			want: Mount{Name: "cfg", Source: filepath.Join(dir, "volumes/cfg"), Destination: "/etc/app", ReadOnly: true, Propagation: "rprivate"}},
		{name: "recursive read-only", vm: corev1.VolumeMount{Name: "host", MountPath: "/host", ReadOnly: true, RecursiveReadOnly: rro(corev1.RecursiveReadOnlyEnabled)},
			want: Mount{Name: "host", Source: hostDir, Destination: "/host", ReadOnly: true, RecursiveReadOnly: true, Propagation: "rprivate"}},
		{name: "recursive read-only needs readOnly", vm: corev1.VolumeMount{Name: "host", MountPath: "/host", RecursiveReadOnly: rro(corev1.RecursiveReadOnlyIfPossible)},
			wantErr: "requires recursiveReadOnly to be Disabled when readOnly is false"},
		{name: "bind mount options", vm: corev1.VolumeMount{Name: "scratch", MountPath: "/d", BindMountOptions: []string{"noexec", "nosuid"}},
			want: Mount{Name: "scratch", Source: filepath.Join(dir, "volumes/scratch"), Destination: "/d", Propagation: "rprivate", Options: []string{"noexec", "nosuid"}}},
		{name: "unknown volume", vm: corev1.VolumeMount{Name: "nope", MountPath: "/x"},
			wantErr: `cannot find volume "nope" to mount into container "c"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{tt.vm}}
			got, err := set.Mounts(c, nil, nil)
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !mountEqual(got[0], tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestUnsetHostPathIsCreatedForTheContainer(t *testing.T) {
	dir := newPodDir(t)
	missing := filepath.Join(t.TempDir(), "created/by/mounts")
	pod := podWith("p", []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: missing}}}},
		corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "h", MountPath: "/h"}}})
	set := mustSetup(t, pod, Options{PodDir: dir})
	if _, err := os.Lstat(missing); !os.IsNotExist(err) {
		t.Fatalf("Setup created the unset-type hostPath: %v", err)
	}
	got, err := set.Mounts(&pod.Spec.Containers[0], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(missing); err != nil || !fi.IsDir() || got[0].Source != missing {
		t.Errorf("Mounts: %+v, stat %v %v; want the missing hostPath created as a directory, as containerd does", got, fi, err)
	}
}

func mountEqual(a, b Mount) bool {
	return a.Name == b.Name && a.Source == b.Source && a.Destination == b.Destination && a.ReadOnly == b.ReadOnly &&
		a.RecursiveReadOnly == b.RecursiveReadOnly && a.Propagation == b.Propagation &&
		strings.Join(a.Options, ",") == strings.Join(b.Options, ",")
}

func TestSubPath(t *testing.T) {
	dir := newPodDir(t)
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "secret.txt"), "host data")
	pod := podWith("p", []corev1.Volume{
		emptyDirVol("data", corev1.EmptyDirVolumeSource{}),
		emptyDirVol("mem", corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}),
		cmVol("cfg", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}),
	})
	set := mustSetup(t, pod, Options{PodDir: dir, Objects: testObjects})
	data, _ := set.Volume("data")
	mem, _ := set.Volume("mem")
	// What a malicious container could have left in the shared volume.
	if err := os.Symlink(outside, filepath.Join(data.Path, "abs-escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../..", filepath.Join(data.Path, "rel-escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(data.Path, "real/dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(data.Path, "inside")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent", filepath.Join(data.Path, "dangling")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		vm      corev1.VolumeMount
		wantErr string
		// wantMsg is the kubelet's message of a SubPathError (wantErr is then its cause).
		wantMsg string
		check   func(t *testing.T, m Mount)
	}{
		{name: "missing subPath is created with the volume's mode", vm: corev1.VolumeMount{Name: "data", MountPath: "/logs", SubPath: "logs/app"},
			check: func(t *testing.T, m Mount) {
				created := filepath.Join(data.Path, "logs/app")
				if fi, err := os.Stat(created); err != nil || !fi.IsDir() {
					t.Fatalf("subPath not created: %v", err)
				}
				// The kubelet's SafeMakeDir: the volume root's mode whatever the umask.
				if got, want := perm(t, created), os.FileMode(0o777); got != want {
					t.Errorf("subPath mode %v, want the volume's %v", got, want)
				}
				mustWrite(t, filepath.Join(m.Source, "through-bind"), "x")
				if got := mustRead(t, filepath.Join(created, "through-bind")); got != "x" {
					t.Errorf("bind mount does not show the subPath: %q", got)
				}
			}},
		{name: "subPath in a tmpfs", vm: corev1.VolumeMount{Name: "mem", MountPath: "/m", SubPath: "a"},
			check: func(t *testing.T, m Mount) {
				if statfs(t, m.Source).Type != unix.TMPFS_MAGIC {
					t.Errorf("subPath of a Memory emptyDir is not on tmpfs")
				}
				if _, err := os.Stat(filepath.Join(mem.Path, "a")); err != nil {
					t.Error(err)
				}
			}},
		{name: "symlink within the volume is followed", vm: corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "inside/dir"},
			check: func(t *testing.T, m Mount) {
				mustWrite(t, filepath.Join(m.Source, "f"), "y")
				if got := mustRead(t, filepath.Join(data.Path, "real/dir/f")); got != "y" {
					t.Errorf("got %q", got)
				}
			}},
		{name: "configMap key as a file", vm: corev1.VolumeMount{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
			check: func(t *testing.T, m Mount) {
				if got := mustRead(t, m.Source); got != "port=80\n" {
					t.Errorf("file subPath reads %q", got)
				}
				if !m.ReadOnly {
					t.Error("configMap subPath mount not read-only")
				}
			}},
		{name: "absolute symlink out of the volume is refused", vm: corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "abs-escape"},
			wantErr: "not within volume path"},
		{name: "relative symlink out of the volume is refused", vm: corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "rel-escape/etc"},
			wantErr: "not within volume path", wantMsg: "failed to create subPath directory"},
		{name: "dangling symlink is refused", vm: corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "dangling/sub"},
			wantErr: "resolving symlinks in subPath dangling/sub", wantMsg: "failed to create subPath directory"},
		{name: "absolute subPath", vm: corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "/etc"},
			wantErr: "error SubPath `/etc` must not be an absolute path"},
		{name: "backsteps", vm: corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "a/../../b"},
			wantErr: "unable to provision SubPath `a/../../b`: must not contain '..'"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &corev1.Container{Name: "c" + string(rune('a'+i)), VolumeMounts: []corev1.VolumeMount{tt.vm}}
			got, err := set.Mounts(c, nil, nil)
			if tt.wantErr != "" {
				var spe *SubPathError
				if errors.As(err, &spe) {
					msg := tt.wantMsg
					if msg == "" {
						msg = "failed to prepare subPath"
					}
					if want := msg + ` for volumeMount "data" of container "` + c.Name + `"`; spe.Error() != want {
						t.Errorf("message %q, want the kubelet's %q", spe.Error(), want)
					}
					err = spe.Err
				}
				wantErr(t, err, tt.wantErr)
				if _, statErr := os.Stat(filepath.Join(outside, "etc")); !os.IsNotExist(statErr) {
					t.Errorf("something was created outside the volume")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(dir, "volume-subpaths", tt.vm.Name, c.Name, "0")
			if got[0].Source != want {
				t.Fatalf("source %s, want the bind mount %s", got[0].Source, want)
			}
			if mounted, _ := isMountPoint(want); !mounted {
				t.Fatalf("%s is not a mount point", want)
			}
			tt.check(t, got[0])

			// A restart of the container reuses the bind mount.
			before, _ := Leftovers(dir)
			again, err := set.Mounts(c, nil, nil)
			if err != nil || again[0].Source != want {
				t.Fatalf("second Mounts: %v %v", again, err)
			}
			if after, _ := Leftovers(dir); len(after) != len(before) {
				t.Errorf("second Mounts changed the mounts: %v -> %v", before, after)
			}
		})
	}
	if got := mustRead(t, filepath.Join(outside, "secret.txt")); got != "host data" {
		t.Errorf("outside file changed: %q", got)
	}
}

func TestSubPathExpr(t *testing.T) {
	dir := newPodDir(t)
	set := mustSetup(t, podWith("p", []corev1.Volume{emptyDirVol("logs", corev1.EmptyDirVolumeSource{})}), Options{PodDir: dir})
	logs, _ := set.Volume("logs")
	tests := []struct {
		name    string
		expr    string
		env     map[string]string
		want    string // created path inside the volume
		wantErr string
	}{
		{name: "expands", expr: "$(POD_NAME)/$(CONTAINER)", env: map[string]string{"POD_NAME": "web-1", "CONTAINER": "app"}, want: "web-1/app"},
		{name: "dollar escape", expr: "cost-$$(X)-$(POD_NAME)", env: map[string]string{"POD_NAME": "p"}, want: "cost-$(X)-p"},
		{name: "missing var", expr: "$(POD_NAME)/$(NODE)/$(AAA)", env: map[string]string{"POD_NAME": "p"},
			wantErr: "missing value for AAA, NODE"},
		{name: "empty var", expr: "x/$(EMPTY)", env: map[string]string{"EMPTY": ""}, wantErr: "missing value for EMPTY"},
		{name: "expansion may not climb out", expr: "$(UP)/etc", env: map[string]string{"UP": ".."},
			wantErr: "must not contain '..'"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &corev1.Container{Name: "c" + string(rune('a'+i)), VolumeMounts: []corev1.VolumeMount{
				{Name: "logs", MountPath: "/logs", SubPathExpr: tt.expr}}}
			got, err := set.Mounts(c, tt.env, nil)
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(logs.Path, tt.want)); err != nil {
				t.Errorf("expanded subPath not created: %v", err)
			}
			if got[0].Source != filepath.Join(dir, "volume-subpaths/logs", c.Name, "0") {
				t.Errorf("source %s", got[0].Source)
			}
		})
	}
}

func TestTeardown(t *testing.T) {
	dir := newPodDir(t)
	hostDir := t.TempDir()
	mustWrite(t, filepath.Join(hostDir, "keep/me.txt"), "precious")
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "also.txt"), "precious too")

	pod := podWith("p", []corev1.Volume{
		emptyDirVol("scratch", corev1.EmptyDirVolumeSource{}),
		emptyDirVol("mem", corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}),
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}},
		secretVol("sec", corev1.SecretVolumeSource{SecretName: "creds"}),
		cmVol("cfg", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}),
	}, corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
		{Name: "host", MountPath: "/host", SubPath: "keep"},
		{Name: "host", MountPath: "/host-new", SubPath: "made/by/subpath"},
		{Name: "mem", MountPath: "/mem", SubPath: "m"},
		{Name: "scratch", MountPath: "/s"},
	}})
	set := mustSetup(t, pod, Options{PodDir: dir, Objects: testObjects})
	if _, err := set.Mounts(&pod.Spec.Containers[0], nil, nil); err != nil {
		t.Fatal(err)
	}
	scratch, _ := set.Volume("scratch")
	// A container left a symlink to the host, and a mount propagated back
	// (Bidirectional) into the emptyDir.
	if err := os.Symlink(outside, filepath.Join(scratch.Path, "to-host")); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(scratch.Path, "nested")
	if err := os.Mkdir(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", nested, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	if left, _ := Leftovers(dir); len(left) != 6 { // mem, sec, 3 subPath binds, nested
		t.Fatalf("Leftovers before Teardown: %v", left)
	}

	// From "another process": nothing but the directory.
	for i := range 2 {
		if err := Teardown(dir); err != nil {
			t.Fatalf("Teardown #%d: %v", i+1, err)
		}
		if left, err := Leftovers(dir); err != nil || len(left) != 0 {
			t.Fatalf("Leftovers after Teardown #%d: %v %v", i+1, left, err)
		}
	}
	for _, sub := range []string{"volumes", "volume-subpaths"} {
		if _, err := os.Lstat(filepath.Join(dir, sub)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", sub, err)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("Teardown removed the pod directory itself: %v", err)
	}
	if got := mustRead(t, filepath.Join(hostDir, "keep/me.txt")); got != "precious" {
		t.Errorf("hostPath content changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(hostDir, "made/by/subpath")); err != nil {
		t.Errorf("subPath directory created in the hostPath is gone: %v", err)
	}
	if got := mustRead(t, filepath.Join(outside, "also.txt")); got != "precious too" {
		t.Errorf("file behind a symlink changed: %q", got)
	}
	if err := Teardown(filepath.Join(dir, "never-existed")); err != nil {
		t.Errorf("Teardown of a missing pod dir: %v", err)
	}
}

func TestTeardownRefusesToEnterAMount(t *testing.T) {
	// If a mount cannot be seen (so not unmounted) Teardown must not delete
	// through it; simulate with a directory that is a bind mount of host data
	// that Teardown is not asked about: removeTree directly.
	dir := newPodDir(t)
	hostDir := t.TempDir()
	mustWrite(t, filepath.Join(hostDir, "data.txt"), "keep")
	target := filepath.Join(dir, "volumes", "x")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(hostDir, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	err := removeTree(filepath.Join(dir, "volumes"))
	wantErr(t, err, "refusing to remove")
	if got := mustRead(t, filepath.Join(hostDir, "data.txt")); got != "keep" {
		t.Errorf("host data changed: %q", got)
	}
}

func isMountPoint(p string) (bool, error) {
	left, err := Leftovers(filepath.Dir(p))
	for _, l := range left {
		if l == p {
			return true, err
		}
	}
	return false, err
}

func readUmask() int {
	m := unix.Umask(0)
	unix.Umask(m)
	return m
}

// An image volume is the runtime's mount of the image, always read-only; a
// subPath must be a directory of the image, resolved inside it, and is
// never created; its error comes after makeMounts' own.
func TestImageVolumeMounts(t *testing.T) {
	dir := newPodDir(t)
	img := t.TempDir() // stands for the runtime's read-only mount of the image
	mustWrite(t, filepath.Join(img, "etc/passwd"), "root:x:0:0")
	mustWrite(t, filepath.Join(img, "file"), "f")
	if err := os.Symlink("/etc", filepath.Join(img, "abs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../..", filepath.Join(img, "etc/up")); err != nil {
		t.Fatal(err)
	}
	pod := podWith("p", []corev1.Volume{
		{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox:1.28"}}},
		emptyDirVol("scratch", corev1.EmptyDirVolumeSource{}),
	})
	set := mustSetup(t, pod, Options{PodDir: dir})
	if v, ok := set.Volume("img"); !ok || v.Kind != KindImage || !v.ReadOnly || v.Path != "" {
		t.Fatalf("Volume(img) = %+v, %v", v, ok)
	}
	if _, err := os.Lstat(filepath.Join(dir, "volumes", "img")); !os.IsNotExist(err) {
		t.Errorf("Setup made a directory for the image volume: %v", err)
	}
	images := map[string]string{"img": img}
	tests := []struct {
		name    string
		vms     []corev1.VolumeMount
		env     map[string]string
		images  map[string]string
		want    Mount
		wantErr string
	}{
		{name: "read-only whatever the mount says", vms: []corev1.VolumeMount{{Name: "img", MountPath: "/v"}}, images: images,
			want: Mount{Name: "img", Source: img, Destination: "/v", ReadOnly: true, Propagation: "rprivate"}},
		{name: "subPath", vms: []corev1.VolumeMount{{Name: "img", MountPath: "/v", SubPath: "etc"}}, images: images,
			want: Mount{Name: "img", Source: filepath.Join(img, "etc"), Destination: "/v", ReadOnly: true, Propagation: "rprivate"}},
		{name: "subPathExpr", vms: []corev1.VolumeMount{{Name: "img", MountPath: "/v", SubPathExpr: "$(D)"}}, env: map[string]string{"D": "etc"}, images: images,
			want: Mount{Name: "img", Source: filepath.Join(img, "etc"), Destination: "/v", ReadOnly: true, Propagation: "rprivate"}},
		{name: "symlinks resolve inside the image", vms: []corev1.VolumeMount{{Name: "img", MountPath: "/v", SubPath: "abs"}}, images: images,
			want: Mount{Name: "img", Source: filepath.Join(img, "etc"), Destination: "/v", ReadOnly: true, Propagation: "rprivate"}},
		{name: "a symlink up stays at the root", vms: []corev1.VolumeMount{{Name: "img", MountPath: "/v", SubPath: "etc/up"}}, images: images,
			want: Mount{Name: "img", Source: img, Destination: "/v", ReadOnly: true, Propagation: "rprivate"}},
		{name: "missing subPath", vms: []corev1.VolumeMount{{Name: "img", MountPath: "/v", SubPath: "not-existing"}}, images: images,
			wantErr: `failed to ensure image subpath "not-existing" of volume "img": no such file or directory`},
		{name: "subPath of a file", vms: []corev1.VolumeMount{{Name: "img", MountPath: "/v", SubPath: "file"}}, images: images,
			wantErr: `failed to ensure image subpath "file" of volume "img": only directory subpath is supported`},
		{name: "makeMounts' error first", vms: []corev1.VolumeMount{{Name: "img", MountPath: "/v", SubPath: "not-existing"}, {Name: "scratch", MountPath: "/s", SubPathExpr: "$(NOPE)"}}, images: images,
			wantErr: "missing value for NOPE"},
		{name: "no mount of the image", vms: []corev1.VolumeMount{{Name: "img", MountPath: "/v"}},
			wantErr: `cannot find volume "img" to mount into container "c"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &corev1.Container{Name: "c", VolumeMounts: tt.vms}
			got, err := set.Mounts(c, tt.env, tt.images)
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !mountEqual(got[0], tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	_, err := set.Mounts(&corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "img", MountPath: "/v", SubPath: "nope"}}}, nil, images)
	var ise *ImageSubPathError
	if !errors.As(err, &ise) {
		t.Errorf("a missing image subPath: %T %v, want an ImageSubPathError", err, err)
	}
	if _, err := os.Lstat(filepath.Join(img, "nope")); !os.IsNotExist(err) {
		t.Errorf("the missing subPath was created: %v", err)
	}
}
