package volumes

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cmVol(name string, src corev1.ConfigMapVolumeSource) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &src}}
}

func secretVol(name string, src corev1.SecretVolumeSource) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &src}}
}

var testObjects = Objects{
	ConfigMaps: map[string]*corev1.ConfigMap{
		"app": {
			ObjectMeta: metav1.ObjectMeta{Name: "app"},
			Data:       map[string]string{"app.conf": "port=80\n", "log.level": "debug"},
			BinaryData: map[string][]byte{"blob": {0, 1, 2}},
		},
	},
	Secrets: map[string]*corev1.Secret{
		"creds": {
			ObjectMeta: metav1.ObjectMeta{Name: "creds"},
			Data:       map[string][]byte{"user": []byte("admin"), "pass": []byte("old")},
			StringData: map[string]string{"pass": "s3cret"},
		},
	},
}

type wantFile struct {
	path    string
	content string
	mode    os.FileMode
}

func TestConfigMapAndSecretVolumes(t *testing.T) {
	ref := func(n string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: n} }
	tests := []struct {
		name     string
		vol      corev1.Volume
		want     []wantFile
		absent   []string
		wantErr  string
		wantTmpf bool
	}{
		{name: "configMap all keys with default mode", vol: cmVol("v", corev1.ConfigMapVolumeSource{LocalObjectReference: ref("app")}),
			want: []wantFile{{"app.conf", "port=80\n", 0o644}, {"log.level", "debug", 0o644}, {"blob", "\x00\x01\x02", 0o644}}},
		{name: "configMap items, item mode and defaultMode", vol: cmVol("v", corev1.ConfigMapVolumeSource{
			LocalObjectReference: ref("app"), DefaultMode: ptr[int32](0o600),
			Items: []corev1.KeyToPath{{Key: "app.conf", Path: "conf/main.conf", Mode: ptr[int32](0o444)}, {Key: "log.level", Path: "level"}}}),
			want:   []wantFile{{"conf/main.conf", "port=80\n", 0o444}, {"level", "debug", 0o600}},
			absent: []string{"app.conf", "blob"}},
		{name: "configMap missing key", vol: cmVol("v", corev1.ConfigMapVolumeSource{LocalObjectReference: ref("app"),
			Items: []corev1.KeyToPath{{Key: "nope", Path: "n"}}}),
			wantErr: "configmap references non-existent config key: nope"},
		{name: "configMap optional missing key is skipped", vol: cmVol("v", corev1.ConfigMapVolumeSource{LocalObjectReference: ref("app"),
			Optional: ptr(true), Items: []corev1.KeyToPath{{Key: "nope", Path: "n"}, {Key: "log.level", Path: "l"}}}),
			want: []wantFile{{"l", "debug", 0o644}}, absent: []string{"n"}},
		{name: "configMap missing object", vol: cmVol("v", corev1.ConfigMapVolumeSource{LocalObjectReference: ref("other")}),
			wantErr: `setting up volume "v" of pod default/p: configmap "other" not found`},
		{name: "configMap optional missing object gives an empty volume", vol: cmVol("v", corev1.ConfigMapVolumeSource{
			LocalObjectReference: ref("other"), Optional: ptr(true)}), absent: []string{"app.conf"}},
		{name: "secret on tmpfs, stringData wins", vol: secretVol("v", corev1.SecretVolumeSource{SecretName: "creds"}),
			want: []wantFile{{"user", "admin", 0o644}, {"pass", "s3cret", 0o644}}, wantTmpf: true},
		{name: "secret items and modes", vol: secretVol("v", corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr[int32](0o400),
			Items: []corev1.KeyToPath{{Key: "pass", Path: "db/password"}, {Key: "user", Path: "username", Mode: ptr[int32](0o440)}}}),
			want: []wantFile{{"db/password", "s3cret", 0o400}, {"username", "admin", 0o440}}, absent: []string{"user", "pass"}, wantTmpf: true},
		{name: "secret missing key", vol: secretVol("v", corev1.SecretVolumeSource{SecretName: "creds",
			Items: []corev1.KeyToPath{{Key: "nope", Path: "n"}}}), wantErr: "references non-existent secret key: nope"},
		{name: "secret missing object", vol: secretVol("v", corev1.SecretVolumeSource{SecretName: "gone"}),
			wantErr: `setting up volume "v" of pod default/p: secret "gone" not found`},
		{name: "secret optional missing object", vol: secretVol("v", corev1.SecretVolumeSource{SecretName: "gone", Optional: ptr(true)}),
			wantTmpf: true},
		{name: "item path may not escape", vol: cmVol("v", corev1.ConfigMapVolumeSource{LocalObjectReference: ref("app"),
			Items: []corev1.KeyToPath{{Key: "log.level", Path: "../evil"}}}), wantErr: "invalid path: must not contain '..'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newPodDir(t)
			pod := podWith("p", []corev1.Volume{tt.vol})
			set, _, err := Setup(pod, Options{PodDir: dir, Objects: testObjects})
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				if left, _ := Leftovers(dir); len(left) != 0 {
					t.Errorf("mounts left after failed Setup: %v", left)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, _ := set.Volume("v")
			if !v.ReadOnly {
				t.Error("configMap/secret volume not marked read-only")
			}
			if isTmpfs := statfs(t, v.Path).Type == unix.TMPFS_MAGIC; isTmpfs != tt.wantTmpf {
				t.Errorf("on tmpfs: %v, want %v", isTmpfs, tt.wantTmpf)
			}
			for _, f := range tt.want {
				p := filepath.Join(v.Path, f.path)
				if got := mustRead(t, p); got != f.content {
					t.Errorf("%s = %q, want %q", f.path, got, f.content)
				}
				if got := perm(t, p); got != f.mode {
					t.Errorf("%s mode %v, want %v", f.path, got, f.mode)
				}
			}
			for _, a := range tt.absent {
				if _, err := os.Lstat(filepath.Join(v.Path, a)); !os.IsNotExist(err) {
					t.Errorf("%s should not exist: %v", a, err)
				}
			}
		})
	}
}

var tsDirRe = regexp.MustCompile(`^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$`)

func TestAtomicWriterLayout(t *testing.T) {
	dir := newPodDir(t)
	objs := Objects{ConfigMaps: map[string]*corev1.ConfigMap{
		"c": {Data: map[string]string{"a": "1", "gone": "soon"}},
	}}
	vol := cmVol("cfg", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"},
		Items: []corev1.KeyToPath{{Key: "a", Path: "a"}, {Key: "a", Path: "sub/deep/b"}, {Key: "gone", Path: "gone"}}})
	pod := podWith("p", []corev1.Volume{vol})
	set := mustSetup(t, pod, Options{PodDir: dir, Objects: objs})
	v, _ := set.Volume("cfg")

	link := func(name string) string {
		t.Helper()
		target, err := os.Readlink(filepath.Join(v.Path, name))
		if err != nil {
			t.Fatalf("%s is not a symlink: %v", name, err)
		}
		return target
	}
	ts := link("..data")
	if !tsDirRe.MatchString(ts) {
		t.Fatalf("..data -> %q, want a ..<timestamp> directory", ts)
	}
	if got := perm(t, filepath.Join(v.Path, ts)); got != 0o755 {
		t.Errorf("timestamp dir mode %v, want 0755", got)
	}
	for name, want := range map[string]string{"a": "..data/a", "sub": "..data/sub", "gone": "..data/gone"} {
		if got := link(name); got != want {
			t.Errorf("%s -> %q, want %q", name, got, want)
		}
	}
	if got := mustRead(t, filepath.Join(v.Path, "sub/deep/b")); got != "1" {
		t.Errorf("sub/deep/b = %q", got)
	}

	// Same data again: nothing is rewritten.
	mustSetup(t, pod, Options{PodDir: dir, Objects: objs})
	if got := link("..data"); got != ts {
		t.Errorf("unchanged payload rewrote the data dir: %s -> %s", ts, got)
	}

	// Changed data, one item dropped: a new data dir is published and the old
	// one and the stale link are gone.
	objs.ConfigMaps["c"] = &corev1.ConfigMap{Data: map[string]string{"a": "2"}}
	pod.Spec.Volumes[0].ConfigMap.Items = vol.ConfigMap.Items[:2]
	mustSetup(t, pod, Options{PodDir: dir, Objects: objs})
	ts2 := link("..data")
	if ts2 == ts || !tsDirRe.MatchString(ts2) {
		t.Fatalf("..data -> %q after update (was %q)", ts2, ts)
	}
	if _, err := os.Lstat(filepath.Join(v.Path, ts)); !os.IsNotExist(err) {
		t.Errorf("old data dir %s still there", ts)
	}
	if _, err := os.Lstat(filepath.Join(v.Path, "gone")); !os.IsNotExist(err) {
		t.Errorf("stale link 'gone' still there")
	}
	if got := mustRead(t, filepath.Join(v.Path, "a")); got != "2" {
		t.Errorf("a = %q after update", got)
	}
	entries, _ := os.ReadDir(v.Path)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 4 { // ..<ts>, ..data, a, sub
		t.Errorf("volume holds %v, want the data dir, ..data, a and sub", names)
	}
}

func TestNestedMountpointsInReadOnlyVolumes(t *testing.T) {
	dir := newPodDir(t)
	pod := podWith("p", []corev1.Volume{
		cmVol("cfg", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}),
		emptyDirVol("scratch", corev1.EmptyDirVolumeSource{}),
	}, corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{
		{Name: "cfg", MountPath: "/etc/app"},
		{Name: "scratch", MountPath: "/etc/app/cache/"},
	}})
	set := mustSetup(t, pod, Options{PodDir: dir, Objects: testObjects})
	v, _ := set.Volume("cfg")
	if fi, err := os.Lstat(filepath.Join(v.Path, "cache")); err != nil || !fi.IsDir() {
		t.Errorf("nested mount point cache not created in the configMap volume: %v", err)
	}
}

func TestDownwardAPIVolume(t *testing.T) {
	items := []corev1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}, Mode: ptr[int32](0o400)},
		{Path: "meta/name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "app", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}},
	}
	cpu := corev1.DownwardAPIVolumeFile{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu"}}
	tests := []struct {
		name    string
		items   []corev1.DownwardAPIVolumeFile
		fields  FieldResolver
		want    []wantFile
		wantErr string
	}{
		{name: "with a resolver", items: append(items, cpu), fields: stubFields{}, want: []wantFile{
			{"labels", "app=\"web\"\ntier=\"front \\\"end\\\"\"", 0o644},
			{"annotations", "note=\"line1\\nline2\"", 0o400},
			{"meta/name", "name-from-resolver", 0o644},
			{"app", "app-from-resolver", 0o644},
			{"cpu", "main/limits.cpu", 0o644},
		}},
		{name: "without a resolver metadata comes from the pod", items: items, want: []wantFile{
			{"meta/name", "p", 0o644}, {"app", "web", 0o644},
		}},
		{name: "resourceFieldRef needs a resolver", items: []corev1.DownwardAPIVolumeFile{cpu},
			wantErr: `downwardAPI item "cpu": resourceFieldRef "limits.cpu" cannot be resolved`},
		{name: "resolver errors are reported", items: []corev1.DownwardAPIVolumeFile{
			{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}, fields: stubFields{},
			wantErr: `downwardAPI item "ns": stub: unknown field metadata.namespace`},
		{name: "only metadata fields", items: []corev1.DownwardAPIVolumeFile{
			{Path: "ip", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			wantErr: `fieldRef "status.podIP": unsupported value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newPodDir(t)
			pod := podWith("p", []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{
				DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: tt.items}}}})
			pod.Labels = map[string]string{"tier": `front "end"`, "app": "web"}
			pod.Annotations = map[string]string{"note": "line1\nline2"}
			set, _, err := Setup(pod, Options{PodDir: dir, Fields: tt.fields})
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				wantErr(t, err, `volume "info"`)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, _ := set.Volume("info")
			if statfs(t, v.Path).Type != unix.TMPFS_MAGIC {
				t.Error("downwardAPI volume is not memory-backed")
			}
			for _, f := range tt.want {
				p := filepath.Join(v.Path, f.path)
				if got := mustRead(t, p); got != f.content {
					t.Errorf("%s = %q, want %q", f.path, got, f.content)
				}
				if got := perm(t, p); got != f.mode {
					t.Errorf("%s mode %v, want %v", f.path, got, f.mode)
				}
			}
		})
	}
}

func TestProjectedVolume(t *testing.T) {
	src := func(extra ...corev1.VolumeProjection) *corev1.ProjectedVolumeSource {
		return &corev1.ProjectedVolumeSource{DefaultMode: ptr[int32](0o440), Sources: append([]corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
				Items: []corev1.KeyToPath{{Key: "log.level", Path: "level"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"},
				Items: []corev1.KeyToPath{{Key: "user", Path: "secret/user", Mode: ptr[int32](0o400)}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Optional: ptr(true)}},
		}, extra...)}
	}
	tests := []struct {
		name    string
		src     *corev1.ProjectedVolumeSource
		want    []wantFile
		wantErr []string
	}{
		{name: "configMap, secret and downwardAPI merged", src: src(), want: []wantFile{
			{"level", "debug", 0o440}, {"secret/user", "admin", 0o400}, {"labels", `app="web"`, 0o440}}},
		{name: "serviceAccountToken is refused by path", src: src(corev1.VolumeProjection{
			ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}),
			wantErr: []string{`volume "proj"`, `serviceAccountToken (path "token") is not supported`}},
		{name: "every failing source is reported", src: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}},
		}}, wantErr: []string{`configmap "nope" not found`, `(path "t") is not supported`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newPodDir(t)
			pod := podWith("p", []corev1.Volume{{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: tt.src}}})
			pod.Labels = map[string]string{"app": "web"}
			set, _, err := Setup(pod, Options{PodDir: dir, Objects: testObjects})
			if len(tt.wantErr) > 0 {
				for _, w := range tt.wantErr {
					wantErr(t, err, w)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, _ := set.Volume("proj")
			if statfs(t, v.Path).Type != unix.TMPFS_MAGIC || !v.ReadOnly {
				t.Errorf("projected volume: tmpfs %v read-only %v, want both", statfs(t, v.Path).Type == unix.TMPFS_MAGIC, v.ReadOnly)
			}
			for _, f := range tt.want {
				p := filepath.Join(v.Path, f.path)
				if got := mustRead(t, p); got != f.content {
					t.Errorf("%s = %q, want %q", f.path, got, f.content)
				}
				if got := perm(t, p); got != f.mode {
					t.Errorf("%s mode %v, want %v", f.path, got, f.mode)
				}
			}
		})
	}
}
