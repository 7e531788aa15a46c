package volumes

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const mi = 1 << 20

func emptyDirVol(name string, src corev1.EmptyDirVolumeSource) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &src}}
}

func TestEmptyDirSharedWithinPodNotAcrossPods(t *testing.T) {
	vols := []corev1.Volume{emptyDirVol("shared", corev1.EmptyDirVolumeSource{})}
	init := corev1.Container{Name: "init-writer", VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/out"}}}
	app := corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/in", ReadOnly: true}}}

	podA := podWith("a", vols, app)
	podA.Spec.InitContainers = []corev1.Container{init}
	dirA := newPodDir(t)
	setA := mustSetup(t, podA, Options{PodDir: dirA})

	initMounts, err := setA.Mounts(&podA.Spec.InitContainers[0], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	appMounts, err := setA.Mounts(&podA.Spec.Containers[0], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantPath := filepath.Join(dirA, "volumes", "shared")
	if initMounts[0].Source != wantPath || appMounts[0].Source != wantPath {
		t.Fatalf("sources %q and %q, want both %q", initMounts[0].Source, appMounts[0].Source, wantPath)
	}
	if initMounts[0].ReadOnly || !appMounts[0].ReadOnly {
		t.Errorf("read-only flags: init %v app %v, want false and true", initMounts[0].ReadOnly, appMounts[0].ReadOnly)
	}
	if got := perm(t, wantPath); got != 0o777 {
		t.Errorf("emptyDir mode %v, want 0777", got)
	}
	mustWrite(t, filepath.Join(initMounts[0].Source, "ready"), "yes")
	if got := mustRead(t, filepath.Join(appMounts[0].Source, "ready")); got != "yes" {
		t.Errorf("app sees %q", got)
	}

	// A second pod with the same volume name gets its own, empty directory.
	dirB := newPodDir(t)
	setB := mustSetup(t, podWith("b", vols, app), Options{PodDir: dirB})
	vb, _ := setB.Volume("shared")
	if vb.Path == wantPath {
		t.Fatalf("two pods share %s", vb.Path)
	}
	if _, err := os.Stat(filepath.Join(vb.Path, "ready")); !os.IsNotExist(err) {
		t.Errorf("pod b sees pod a's file: %v", err)
	}
}

func TestEmptyDirSetupIsIdempotent(t *testing.T) {
	dir := newPodDir(t)
	pod := podWith("p", []corev1.Volume{
		emptyDirVol("disk", corev1.EmptyDirVolumeSource{}),
		emptyDirVol("mem", corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}),
	})
	set := mustSetup(t, pod, Options{PodDir: dir})
	for _, v := range set.Volumes() {
		mustWrite(t, filepath.Join(v.Path, "keep"), v.Name)
	}
	before, _ := Leftovers(dir)
	set = mustSetup(t, pod, Options{PodDir: dir}) // the supervisor restarted
	after, _ := Leftovers(dir)
	if len(before) != 1 || len(after) != 1 {
		t.Errorf("mounts before %v after %v, want one tmpfs each time", before, after)
	}
	for _, v := range set.Volumes() {
		if got := mustRead(t, filepath.Join(v.Path, "keep")); got != v.Name {
			t.Errorf("%s lost its content: %q", v.Name, got)
		}
	}
}

func TestEmptyDirMemorySize(t *testing.T) {
	tests := []struct {
		name      string
		sizeLimit string
		nodeAlloc int64
		podLimit  int64
		want      int64
	}{
		{name: "sizeLimit", sizeLimit: "8Mi", nodeAlloc: 1024 * mi, want: 8 * mi},
		{name: "pod limit caps a larger sizeLimit", sizeLimit: "32Mi", nodeAlloc: 1024 * mi, podLimit: 16 * mi, want: 16 * mi},
		{name: "no sizeLimit: pod limit", nodeAlloc: 1024 * mi, podLimit: 12 * mi, want: 12 * mi},
		{name: "no sizeLimit nor pod limit: node allocatable", nodeAlloc: 20 * mi, want: 20 * mi},
		{name: "node allocatable caps sizeLimit", sizeLimit: "64Mi", nodeAlloc: 24 * mi, want: 24 * mi},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newPodDir(t)
			src := corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
			if tt.sizeLimit != "" {
				src.SizeLimit = ptr(resource.MustParse(tt.sizeLimit))
			}
			set := mustSetup(t, podWith("p", []corev1.Volume{emptyDirVol("cache", src)}),
				Options{PodDir: dir, NodeAllocatableMemory: tt.nodeAlloc, PodMemoryLimit: tt.podLimit})
			v, _ := set.Volume("cache")
			st := statfs(t, v.Path)
			if st.Type != unix.TMPFS_MAGIC {
				t.Fatalf("%s is not a tmpfs (type %#x)", v.Path, st.Type)
			}
			if got := int64(st.Blocks) * st.Bsize; got != tt.want || v.SizeBytes != tt.want {
				t.Errorf("tmpfs size %d (reported %d), want %d", got, v.SizeBytes, tt.want)
			}
			if got := perm(t, v.Path); got != 0o777|os.ModeSticky {
				t.Errorf("tmpfs root mode %v, want the tmpfs default 1777 as with the kubelet", got)
			}
			if left, _ := Leftovers(dir); len(left) != 1 || left[0] != v.Path {
				t.Errorf("Leftovers %v, want [%s]", left, v.Path)
			}
			if err := Teardown(dir); err != nil {
				t.Fatal(err)
			}
			if left, _ := Leftovers(dir); len(left) != 0 {
				t.Errorf("Leftovers after Teardown: %v", left)
			}
			if _, err := os.Lstat(v.Path); !os.IsNotExist(err) {
				t.Errorf("volume dir still there: %v", err)
			}
		})
	}
}

func TestEmptyDirMedia(t *testing.T) {
	tests := []struct {
		name     string
		src      corev1.EmptyDirVolumeSource
		wantErr  string
		wantNote string
	}{
		{name: "disk sizeLimit: no note (the supervisor evicts)", src: corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("1Gi"))}},
		{name: "hugepages", src: corev1.EmptyDirVolumeSource{Medium: "HugePages-2Mi"}, wantErr: `emptyDir medium "HugePages-2Mi" is not supported`},
		{name: "unknown", src: corev1.EmptyDirVolumeSource{Medium: "Tape"}, wantErr: `unknown storage medium "Tape"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newPodDir(t)
			_, notes, err := Setup(podWith("p", []corev1.Volume{emptyDirVol("v", tt.src)}), Options{PodDir: dir})
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				wantErr(t, err, `volume "v"`)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantNote == "" {
				if len(notes) != 0 {
					t.Errorf("notes %q, want none", notes)
				}
			} else if len(notes) != 1 || !strings.Contains(notes[0], tt.wantNote) {
				t.Errorf("notes %q, want one containing %q", notes, tt.wantNote)
			}
		})
	}
}

func TestHostPathTypes(t *testing.T) {
	base := t.TempDir()
	dirPath := filepath.Join(base, "dir")
	filePath := filepath.Join(base, "file")
	sockPath := filepath.Join(base, "sock")
	blockPath := filepath.Join(base, "blk")
	mustWrite(t, filepath.Join(dirPath, "x"), "x")
	mustWrite(t, filePath, "f")
	l, err := net.Listen("unix", sockPath)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := unix.Mknod(blockPath, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 250))); err != nil {
		t.Fatal(err)
	}
	missing := func(name string) string { return filepath.Join(base, "missing-"+name) }

	tests := []struct {
		name    string
		path    string
		typ     corev1.HostPathType
		wantErr string
		check   func(t *testing.T, p string)
	}{
		{name: "unset type does not check or create", path: missing("unset"), typ: corev1.HostPathUnset,
			check: func(t *testing.T, p string) {
				if _, err := os.Lstat(p); !os.IsNotExist(err) {
					t.Errorf("unset type created %s", p)
				}
			}},
		{name: "DirectoryOrCreate creates", path: missing("dir"), typ: corev1.HostPathDirectoryOrCreate,
			check: func(t *testing.T, p string) {
				if fi, err := os.Stat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
					t.Errorf("created %v %v, want a 0755 directory", fi, err)
				}
			}},
		{name: "DirectoryOrCreate existing dir", path: dirPath, typ: corev1.HostPathDirectoryOrCreate},
		{name: "DirectoryOrCreate on a file", path: filePath, typ: corev1.HostPathDirectoryOrCreate,
			wantErr: "hostPath type check failed: " + filePath + " is not a directory"},
		{name: "Directory", path: dirPath, typ: corev1.HostPathDirectory},
		{name: "Directory missing", path: missing("d2"), typ: corev1.HostPathDirectory,
			wantErr: "hostPath type check failed: " + missing("d2") + " is not a directory"},
		{name: "Directory on a socket", path: sockPath, typ: corev1.HostPathDirectory,
			wantErr: "is not a directory"},
		{name: "FileOrCreate creates", path: missing("file"), typ: corev1.HostPathFileOrCreate,
			check: func(t *testing.T, p string) {
				if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
					t.Errorf("created %v %v, want a 0644 file", fi, err)
				}
			}},
		{name: "FileOrCreate needs the parent", path: filepath.Join(missing("parent"), "f"), typ: corev1.HostPathFileOrCreate,
			wantErr: "no such file or directory"},
		{name: "FileOrCreate on a directory", path: dirPath, typ: corev1.HostPathFileOrCreate,
			wantErr: "hostPath type check failed: " + dirPath + " is not a file"},
		{name: "File", path: filePath, typ: corev1.HostPathFile},
		{name: "File missing", path: missing("f2"), typ: corev1.HostPathFile, wantErr: "hostPath type check failed: " + missing("f2") + " is not a file"},
		{name: "Socket", path: sockPath, typ: corev1.HostPathSocket},
		{name: "Socket on a file", path: filePath, typ: corev1.HostPathSocket,
			wantErr: "is not a socket file"},
		{name: "CharDevice", path: "/dev/null", typ: corev1.HostPathCharDev},
		{name: "CharDevice on a directory", path: dirPath, typ: corev1.HostPathCharDev,
			wantErr: "is not a character device"},
		{name: "BlockDevice", path: blockPath, typ: corev1.HostPathBlockDev},
		{name: "BlockDevice on a char device", path: "/dev/null", typ: corev1.HostPathBlockDev,
			wantErr: "hostPath type check failed: /dev/null is not a block device"},
		{name: "invalid type", path: dirPath, typ: "Fifo", wantErr: "Fifo is an invalid volume type"},
		{name: "backsteps", path: dirPath + "/../dir", typ: corev1.HostPathDirectory,
			wantErr: "invalid HostPath `" + dirPath + "/../dir`: must not contain '..'"},
		{name: "relative", path: "var/log", typ: corev1.HostPathUnset, wantErr: "must be an absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newPodDir(t)
			typ := tt.typ
			pod := podWith("p", []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: tt.path, Type: &typ}}}})
			set, _, err := Setup(pod, Options{PodDir: dir})
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				wantErr(t, err, `setting up volume "host" of pod default/p`)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, _ := set.Volume("host")
			if v.Kind != KindHostPath || v.Path != filepath.Clean(tt.path) {
				t.Errorf("volume %+v, want hostPath at %s", v, tt.path)
			}
			if tt.check != nil {
				tt.check(t, tt.path)
			}
		})
	}
}

func TestUnsupportedVolumeType(t *testing.T) {
	dir := newPodDir(t)
	pod := podWith("p", []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/x"}}}})
	_, _, err := Setup(pod, Options{PodDir: dir})
	wantErr(t, err, `setting up volume "data" of pod default/p: volume type nfs is not supported by podrun`)
}

// A claim is its directory in the store, mounted read-only when the volume says so.
func TestClaimVolume(t *testing.T) {
	dir := newPodDir(t)
	claimDir := t.TempDir()
	pod := podWith("p", []corev1.Volume{
		{Name: "rw", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		{Name: "ro", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c", ReadOnly: true}}},
	})
	paths := func(name string) (string, error) {
		if name != "c" {
			return "", fmt.Errorf("persistentvolumeclaim %q not found", name)
		}
		return claimDir, nil
	}
	set, _, err := Setup(pod, Options{PodDir: dir, ClaimPath: paths})
	if err != nil {
		t.Fatal(err)
	}
	for name, ro := range map[string]bool{"rw": false, "ro": true} {
		v, _ := set.Volume(name)
		if v.Kind != KindClaim || v.Path != claimDir || v.ReadOnly != ro {
			t.Errorf("volume %s = %+v", name, v)
		}
	}
	missing := podWith("p", []corev1.Volume{{Name: "x", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "gone"}}}})
	_, _, err = Setup(missing, Options{PodDir: newPodDir(t), ClaimPath: paths})
	wantErr(t, err, `setting up volume "x" of pod default/p: persistentvolumeclaim "gone" not found`)
	// Teardown leaves the claim's data alone.
	if err := os.WriteFile(filepath.Join(claimDir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Teardown(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(claimDir, "f")); err != nil {
		t.Fatalf("teardown touched the claim: %v", err)
	}
}

func TestSetupFailureTearsDownWhatItMade(t *testing.T) {
	dir := newPodDir(t)
	pod := podWith("p", []corev1.Volume{
		emptyDirVol("mem", corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}),
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}},
	})
	secrets := map[string]*corev1.Secret{"s": {Data: map[string][]byte{"k": []byte("v")}}}
	_, _, err := Setup(pod, Options{PodDir: dir, Objects: Objects{Secrets: secrets}})
	wantErr(t, err, `setting up volume "cfg" of pod default/p: configmap "absent" not found`)
	if left, _ := Leftovers(dir); len(left) != 0 {
		t.Errorf("mounts left after failed Setup: %v", left)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "volumes"))
	if len(entries) != 0 {
		t.Errorf("volumes left after failed Setup: %v", entries)
	}
}

func TestFSGroup(t *testing.T) {
	dir := newPodDir(t)
	pod := podWith("p", []corev1.Volume{
		emptyDirVol("scratch", corev1.EmptyDirVolumeSource{}),
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr[int32](0o400)}}},
	})
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr[int64](4321)}
	secrets := map[string]*corev1.Secret{"s": {Data: map[string][]byte{"token": []byte("t")}}}
	set := mustSetup(t, pod, Options{PodDir: dir, Objects: Objects{Secrets: secrets}})

	gid := func(p string) uint32 {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Gid
	}
	scratch, _ := set.Volume("scratch")
	if g, m := gid(scratch.Path), perm(t, scratch.Path); g != 4321 || m != 0o777|os.ModeSetgid {
		t.Errorf("emptyDir gid %d mode %v, want 4321 and g+s 0777", g, m)
	}
	sec, _ := set.Volume("sec")
	token := filepath.Join(sec.Path, "token")
	if g, m := gid(token), perm(t, token); g != 4321 || m != 0o440 {
		t.Errorf("secret file gid %d mode %v, want 4321 and 0440 (0400 plus group read)", g, m)
	}
}
