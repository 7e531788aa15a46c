package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/internal/errdefs"
)

func testClaim(size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

// A claim is bound to a new directory at once, keeps it when applied again,
// refuses spec changes, and waits for the last pod using it to be deleted.
func TestClaimLifecycle(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	if action, err := l.Put(ClaimKind, testClaim("1Gi")); err != nil || action != "created" {
		t.Fatalf("Put = %q, %v", action, err)
	}
	c, err := l.Claim("default", "data")
	if err != nil {
		t.Fatal(err)
	}
	dir := l.ClaimDir("default", "data")
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o777 {
		t.Fatalf("claim directory: %v %v", st, err)
	}
	q := c.Status.Capacity[corev1.ResourceStorage]
	if c.Status.Phase != corev1.ClaimBound || c.Spec.VolumeName != "pvc-"+string(c.UID) || q.String() != "1Gi" ||
		len(c.Status.AccessModes) != 1 || len(c.Finalizers) != 1 || c.Finalizers[0] != PVCProtectionFinalizer {
		t.Fatalf("stored claim %+v", c)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if action, err := l.Put(ClaimKind, testClaim("1Gi")); err != nil || action != "unchanged" {
		t.Fatalf("Put again = %q, %v", action, err)
	}
	labelled := testClaim("1Gi")
	labelled.Labels = map[string]string{"a": "b"}
	if action, err := l.Put(ClaimKind, labelled); err != nil || action != "configured" {
		t.Fatalf("Put with a label = %q, %v", action, err)
	}
	if _, err := l.Put(ClaimKind, testClaim("2Gi")); !errdefs.IsInvalid(err) || !strings.Contains(err.Error(), "must support resize") {
		t.Fatalf("resize: %v", err)
	}
	other := testClaim("1Gi")
	other.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	if _, err := l.Put(ClaimKind, other); !errdefs.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Forbidden: spec is immutable after creation") {
		t.Fatalf("access mode change: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "f")); err != nil {
		t.Fatalf("data lost across re-apply: %v", err)
	}

	// In use by a pod: Terminating until the pod's record is gone.
	pod := testPod("user")
	pod.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	rec, err := CreateRecord(l, pod, &Objects{}, Settings{}, "h")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(ClaimKind, "default", "data"); err != nil {
		t.Fatal(err)
	}
	if c, err := l.Claim("default", "data"); err != nil || c.DeletionTimestamp == nil {
		t.Fatalf("claim in use after delete: %v %v", c, err)
	}
	if err := ReleaseClaims(l, "default"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim("default", "data"); err != nil {
		t.Fatal("released while in use")
	}
	if err := os.RemoveAll(rec.Paths.Dir); err != nil {
		t.Fatal(err)
	}
	if err := ReleaseClaims(l, "default"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim("default", "data"); !errdefs.IsNotFound(err) || err.Error() != `persistentvolumeclaim "data" not found` {
		t.Fatalf("claim after its last pod: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("claim directory after delete: %v", err)
	}
}

func TestNamespaces(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	if action, err := l.Put(NamespaceKind, ns.DeepCopy()); err != nil || action != "created" {
		t.Fatalf("Put = %q, %v", action, err)
	}
	if action, err := l.Put(NamespaceKind, ns.DeepCopy()); err != nil || action != "unchanged" {
		t.Fatalf("Put again = %q, %v", action, err)
	}
	objs, err := l.List(NamespaceKind, "")
	if err != nil || len(objs) != 1 {
		t.Fatalf("List = %v, %v", objs, err)
	}
	got := objs[0].(*corev1.Namespace)
	if got.Status.Phase != corev1.NamespaceActive || got.Labels[corev1.LabelMetadataName] != "team" {
		t.Fatalf("stored %+v", got)
	}
	if err := l.MarkNamespaceTerminating("team"); err != nil {
		t.Fatal(err)
	}
	o, _ := l.Get(NamespaceKind, "", "team")
	if o.GetDeletionTimestamp() == nil || o.(*corev1.Namespace).Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("after MarkNamespaceTerminating: %+v", o)
	}
	if _, err := l.Put(ConfigMapKind, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ci"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateRecord(l, testPod("p"), &Objects{}, Settings{}, "h"); err != nil {
		t.Fatal(err)
	}
	if got := UsedNamespaces(l); strings.Join(got, ",") != "ci,default" {
		t.Fatalf("UsedNamespaces = %v", got)
	}
}
