package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/internal/errdefs"
)

func TestFileName(t *testing.T) {
	long := strings.Repeat("a", 253)
	other := strings.Repeat("a", 252) + "b"
	for _, tc := range []struct {
		name string
		max  int
		same bool
	}{
		{"short", 250, true},
		{long, 253, true},
		{long, 200, false},
		{long, 150, false},
	} {
		got := fileName(tc.name, tc.max)
		if len(got) > tc.max {
			t.Errorf("fileName(%d chars, %d) has %d bytes", len(tc.name), tc.max, len(got))
		}
		if (got == tc.name) != tc.same {
			t.Errorf("fileName(%d chars, %d) = %q", len(tc.name), tc.max, got)
		}
	}
	if fileName(long, 150) == fileName(other, 150) {
		t.Error("two long names share a file name")
	}
	if fileName(long, 150) != fileName(long, 150) {
		t.Error("fileName is not deterministic")
	}
}

func TestPodDirNameFits(t *testing.T) {
	ns := strings.Repeat("n", 63)
	uid := "0123456789abcdef0123456789abcdef0123"
	for _, n := range []int{1, 154, 200, 253} {
		name := strings.Repeat("p", n)
		d := PodDirName(ns, name, uid)
		if len(d) > maxFileName {
			t.Errorf("name of %d chars: directory name of %d bytes", n, len(d))
		}
		gotNS, _, gotUID := parseDirName(d)
		if gotNS != ns || gotUID != uid {
			t.Errorf("parseDirName(%q) = %q, %q", d, gotNS, gotUID)
		}
		if !strings.HasPrefix(d, PodDirName(ns, name, "")) {
			t.Errorf("%q does not start with the name's prefix", d)
		}
	}
}

func TestParseStartTime(t *testing.T) {
	rest := " 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 10"
	for _, tc := range []struct {
		stat string
		want uint64
		err  bool
	}{
		{"42 (podrun) S" + rest, 123456, false},
		{"42 (a b) c) R" + rest, 123456, false},
		{"42 (podrun) Z" + rest, 0, true},
		{"42 (podrun) S 1 2", 0, true},
		{"garbage", 0, true},
	} {
		got, err := parseStartTime(tc.stat)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseStartTime(%q) = %d, %v", tc.stat, got, err)
		}
	}
}

func TestSupervisorLiveness(t *testing.T) {
	dir := t.TempDir()
	paths := PodPaths{Dir: dir, RunDir: dir}
	if SupervisorPid(paths) != 0 {
		t.Fatal("alive without a pid file")
	}
	if err := WriteSupervisor(paths); err != nil {
		t.Fatal(err)
	}
	if got := SupervisorPid(paths); got != os.Getpid() {
		t.Fatalf("SupervisorPid = %d, want %d", got, os.Getpid())
	}
	// The same pid with another start time is another process.
	if err := os.WriteFile(paths.StartTimeFile(), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if SupervisorPid(paths) != 0 {
		t.Fatal("a reused pid counts as the supervisor")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("asking created files: %v", entries)
	}
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: "0123456789abcdef0123456789abcdef0123", CreationTimestamp: metav1.Now()},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir(), CgroupParent: "/flags"}
	set := Settings{CgroupParent: "/ci", CgroupDriver: "cgroupfs", Bridge: "br-ci", Subnet: "10.9.0.0/24", PidsLimit: 100}
	for _, name := range []string{"web", strings.Repeat("x", 253)} {
		rec, err := CreateRecord(l, testPod(name), &Objects{}, set, "hash")
		if err != nil {
			t.Fatal(err)
		}
		got, err := FindPod(l, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		if got.Broken != nil || got.Pod.Name != name || got.Paths.Dir != rec.Paths.Dir {
			t.Fatalf("found %+v", got)
		}
		if got.Settings.Version != SettingsVersion || got.PodLayout(l).CgroupParent != "/ci" || got.PodLayout(l).Bridge != "br-ci" {
			t.Errorf("settings %+v", got.Settings)
		}
		if data, _ := os.ReadFile(got.Paths.AppliedFile()); string(data) != "hash" {
			t.Errorf("applied hash %q", data)
		}
		if byUID, err := FindPodByUID(l, string(rec.Pod.UID)); err != nil || byUID.Pod.Name != name {
			t.Errorf("FindPodByUID: %v", err)
		}
		if err := os.RemoveAll(rec.Paths.Dir); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := FindPod(l, "default", "web"); !errdefs.IsNotFound(err) {
		t.Errorf("FindPod of a deleted pod: %v", err)
	}
	// A name is a name, not a pattern.
	if _, err := CreateRecord(l, testPod("web"), &Objects{}, set, "h"); err != nil {
		t.Fatal(err)
	}
	if _, err := FindPod(l, "default", "*"); !errdefs.IsNotFound(err) {
		t.Errorf("FindPod(*) = %v", err)
	}
	// A record written before settings were recorded keeps the current flags.
	old := &Record{}
	if old.PodLayout(l).CgroupParent != "/flags" {
		t.Error("a record without settings does not keep the flags")
	}
}

func TestBrokenRecordIsListed(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	good, _ := CreateRecord(l, testPod("good"), &Objects{}, Settings{}, "h")
	p := testPod("bad")
	p.UID = "fedcba9876543210fedcba9876543210fedc"
	bad, err := CreateRecord(l, p, &Objects{}, Settings{CgroupParent: "/ci"}, "h")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pod.json", "status.json"} {
		if err := os.WriteFile(filepath.Join(bad.Paths.Dir, f), []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := ListPods(l, "")
	if err != nil || len(recs) != 2 {
		t.Fatalf("ListPods = %d records, %v", len(recs), err)
	}
	for _, r := range recs {
		switch r.Pod.Name {
		case "good":
			if r.Broken != nil || r.View().Status.Phase != corev1.PodPending {
				t.Errorf("good pod: %v %s", r.Broken, r.View().Status.Phase)
			}
		case "bad":
			v := r.View()
			if r.Broken == nil || v.Status.Phase != corev1.PodUnknown || !strings.Contains(v.Status.Message, "cannot be read") {
				t.Errorf("bad pod: %v %s %q", r.Broken, v.Status.Phase, v.Status.Message)
			}
			if r.Pod.UID != p.UID || r.PodLayout(l).CgroupParent != "/ci" {
				t.Errorf("bad pod identity %s settings %+v", r.Pod.UID, r.Settings)
			}
		default:
			t.Errorf("unexpected pod %q", r.Pod.Name)
		}
	}
	_ = good
}

func TestStaleCreationsAreRemovedAndNeverListed(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	tmp := filepath.Join(l.PodsDir(), creatingPrefix+"x")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if recs, _ := ListPods(l, ""); len(recs) != 0 {
		t.Fatalf("a record being created is listed: %v", recs)
	}
	RemoveStaleCreations(l, time.Hour)
	if _, err := os.Stat(tmp); err != nil {
		t.Fatal("a fresh creation was removed")
	}
	RemoveStaleCreations(l, 0)
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatal("a stale creation was kept")
	}
}

// A record leaves the listing at once when its removal begins (never read
// half removed, as an Unknown pod), and what a crash left of a removal goes.
func TestRemovedRecordLeavesTheListingAtOnce(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	dir := filepath.Join(l.PodsDir(), "ns_p_u1")
	if err := os.MkdirAll(filepath.Join(dir, "containers"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pod.json"), []byte(`{"metadata":{"name":"p","namespace":"ns","uid":"u1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if recs, _ := ListPods(l, ""); len(recs) != 1 || !HasObjectsForOwner(l) {
		t.Fatalf("the record is not listed: %v", recs)
	}
	// A removal cut short after its marker: gone for every reader.
	if err := os.WriteFile(filepath.Join(dir, removingMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if recs, _ := ListPods(l, ""); len(recs) != 0 || HasObjectsForOwner(l) {
		t.Fatalf("a record being removed is listed: %v", recs)
	}
	if _, err := FindPod(l, "ns", "p"); err == nil {
		t.Fatal("a record being removed is found")
	}
	RemoveStaleCreations(l, time.Hour)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("a removal cut short was kept")
	}
	if err := RemoveRecordDir(dir); err != nil {
		t.Fatalf("removing a record already gone: %v", err)
	}
	// Emptied (the marker's last moment): not a pod either.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if recs, _ := ListPods(l, ""); len(recs) != 0 || HasObjectsForOwner(l) {
		t.Fatalf("an empty record directory is listed: %v (or keeps the services owner)", recs)
	}
	RemoveStaleCreations(l, time.Hour)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("an emptied record directory was kept")
	}
}

func TestObjects(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	cm := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": v}}
	}
	for _, tc := range []struct {
		obj  *corev1.ConfigMap
		want string
	}{
		{cm("1"), "created"},
		{cm("1"), "unchanged"},
		{cm("2"), "configured"},
	} {
		got, err := l.Put(ConfigMapKind, tc.obj)
		if err != nil || got != tc.want {
			t.Fatalf("Put = %q, %v; want %q", got, err, tc.want)
		}
	}
	o, err := l.Get(ConfigMapKind, "ns", "cfg")
	if err != nil || o.(*corev1.ConfigMap).Data["k"] != "2" || o.GetUID() == "" {
		t.Fatalf("Get = %+v, %v", o, err)
	}
	if got := l.ConfigMaps("ns"); len(got) != 1 || got["cfg"] == nil {
		t.Errorf("ConfigMaps = %v", got)
	}
	if got := l.ConfigMaps("other"); len(got) != 0 {
		t.Errorf("another namespace sees %v", got)
	}
	yes := true
	im := cm("3")
	im.Immutable = &yes
	if _, err := l.Put(ConfigMapKind, im); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(ConfigMapKind, func() *corev1.ConfigMap { c := cm("4"); c.Immutable = &yes; return c }()); !errdefs.IsInvalid(err) ||
		err.Error() != "The ConfigMap \"cfg\" is invalid: data: Forbidden: field is immutable when `immutable` is set" {
		t.Errorf("changing an immutable ConfigMap: %v", err)
	}
	no := false
	if _, err := l.Put(ConfigMapKind, func() *corev1.ConfigMap { c := cm("4"); c.Immutable = &no; return c }()); !errdefs.IsInvalid(err) ||
		err.Error() != "The ConfigMap \"cfg\" is invalid: [immutable: Forbidden: field is immutable when `immutable` is set, data: Forbidden: field is immutable when `immutable` is set]" {
		t.Errorf("making an immutable ConfigMap mutable: %v", err)
	}
	// configmap_volume.go "should be immutable if `immutable` field is set":
	// its metadata may still change.
	if r, err := l.Put(ConfigMapKind, func() *corev1.ConfigMap {
		c := cm("3")
		c.Immutable, c.Labels = &yes, map[string]string{"label1": "value1"}
		return c
	}()); err != nil || r != "configured" {
		t.Errorf("relabelling an immutable ConfigMap: %q, %v", r, err)
	}
	if err := l.Remove(ConfigMapKind, "ns", "cfg"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ConfigMapKind, "ns", "cfg"); !errdefs.IsNotFound(err) {
		t.Errorf("Get after Remove: %v", err)
	}
	if err := l.Remove(ConfigMapKind, "ns", "cfg"); !errdefs.IsNotFound(err) {
		t.Errorf("Remove twice: %v", err)
	}
	for word, want := range map[string]*Kind{"configmaps": ConfigMapKind, "cm": ConfigMapKind, "ConfigMap": ConfigMapKind, "secrets": SecretKind, "secret": SecretKind} {
		if k, ok := KindFor(word); !ok || k != want {
			t.Errorf("KindFor(%q) = %v", word, k)
		}
	}
	if _, ok := KindFor("pods"); ok {
		t.Error("pods is not a store object kind")
	}
}

func TestNameLockSerialises(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	var mu sync.Mutex
	inside, most := 0, 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lock, err := l.LockName("ns", "pods", strings.Repeat("n", 253))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			lock.Unlock()
		}()
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d holders at once", most)
	}
}

func TestRequestShowsDeletion(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	rec, _ := CreateRecord(l, testPod("web"), &Objects{}, Settings{}, "h")
	if err := os.MkdirAll(rec.Paths.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(Request{Delete: &DeleteRequest{Timestamp: metav1.Now(), GracePeriodSeconds: 5}})
	if err := os.WriteFile(rec.Paths.RequestFile(), data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := rec.Reload(l)
	if got.Pod.DeletionTimestamp == nil || *got.Pod.DeletionGracePeriodSeconds != 5 {
		t.Errorf("deletion not shown: %+v", got.Pod.ObjectMeta)
	}
}

// A pod whose supervisor recorded itself and died before the pod started (a
// crash while it built the sandbox) is lost at once, shown as Unknown; one
// that never had a supervisor is Pending until apply's start timeout.
func TestLostBeforeStart(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	rec, err := CreateRecord(l, testPod("web"), &Objects{}, Settings{}, "h")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Lost() || rec.View().Status.Phase != corev1.PodPending {
		t.Fatalf("a pod apply is starting is lost: %+v", rec.View().Status)
	}
	if err := os.MkdirAll(rec.Paths.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A dead supervisor's files: a pid with another start time.
	if err := os.WriteFile(rec.Paths.PidFile(), []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec.Paths.StartTimeFile(), []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := rec.View(); !rec.Lost() || v.Status.Phase != corev1.PodUnknown || !strings.Contains(v.Status.Message, "supervisor is not running") {
		t.Errorf("a pod whose supervisor died before it started: lost %v, %+v", rec.Lost(), v.Status)
	}
}

// An apply killed before it renamed the record into place leaves a
// .creating- directory; the next apply of the name removes it, with the
// Secrets written for it under the run root, and nothing of other names.
func TestRemoveInterruptedCreations(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	mk := func(name, uid string) (string, PodPaths) {
		p := testPod(name)
		p.UID = types.UID(uid)
		rec, err := CreateRecord(l, p, &Objects{Secrets: []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "s"}}}}, Settings{}, "h")
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(l.PodsDir(), creatingPrefix+uid)
		if err := os.Rename(rec.Paths.Dir, tmp); err != nil {
			t.Fatal(err)
		}
		return tmp, rec.Paths
	}
	webTmp, webPaths := mk("web", "0123456789abcdef0123456789abcdef0001")
	dbTmp, dbPaths := mk("db", "0123456789abcdef0123456789abcdef0002")
	RemoveInterruptedCreations(l, "default", "web")
	for _, p := range []string{webTmp, webPaths.RunDir} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is left", p)
		}
	}
	for _, p := range []string{dbTmp, dbPaths.SecretsFile()} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("another name's creation was removed: %v", err)
		}
	}
}
