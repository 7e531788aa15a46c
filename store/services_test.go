package store

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Service is stored with its allocation; the same Service again is
// unchanged, a changed one configured with its UID kept; kubectl's names find
// the kind; its existence keeps the services owner wanted.
func TestServiceObjects(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	for _, w := range []string{"svc", "service", "services", "Service"} {
		if k, ok := KindFor(w); !ok || k != ServiceKind {
			t.Errorf("KindFor(%q) = %v, %v", w, k, ok)
		}
	}
	if HasObjectsForOwner(l) {
		t.Fatal("an empty store wants an owner")
	}
	mk := func(ip string, port int32) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "myservice", Namespace: "default"},
			Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: port}}}}
	}
	for i, tc := range []struct {
		svc  *corev1.Service
		want string
	}{{mk("10.96.0.237", 80), "created"}, {mk("10.96.0.237", 80), "unchanged"}, {mk("10.96.0.237", 81), "configured"}} {
		got, err := l.Put(ServiceKind, tc.svc)
		if err != nil || got != tc.want {
			t.Fatalf("put %d: %q, %v; want %q", i, got, err, tc.want)
		}
	}
	svcs := l.Services("default")
	if len(svcs) != 1 || svcs[0].Spec.ClusterIP != "10.96.0.237" || svcs[0].Spec.Ports[0].Port != 81 || svcs[0].UID == "" {
		t.Fatalf("stored: %+v", svcs)
	}
	if !HasObjectsForOwner(l) {
		t.Error("a stored Service does not want an owner")
	}
	if err := l.Remove(ServiceKind, "default", "myservice"); err != nil {
		t.Fatal(err)
	}
	if HasObjectsForOwner(l) || len(l.Services("")) != 0 {
		t.Error("a removed Service is still there")
	}
}

func TestServiceSettingsAndOwnerLiveness(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	if _, err := l.ReadServiceSettings(); !os.IsNotExist(err) {
		t.Fatalf("settings before the first record: %v", err)
	}
	want := ServiceSettings{ServiceCIDR: "10.221.0.0/24", ClusterDNS: "10.221.0.10", Bridge: "b", Subnet: "10.220.0.0/24"}
	if err := l.WriteServiceSettings(want); err != nil {
		t.Fatal(err)
	}
	got, err := l.ReadServiceSettings()
	want.Version = 1
	if err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	o := l.ServicesOwner()
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if OwnerPid(o) != 0 {
		t.Fatal("an owner without a record is alive")
	}
	if err := WriteOwner(o); err != nil {
		t.Fatal(err)
	}
	if OwnerPid(o) != os.Getpid() {
		t.Errorf("the recorded owner is not alive")
	}
	RemoveOwner(o)
	if OwnerPid(o) != 0 {
		t.Errorf("a removed owner is alive")
	}
	if ExitingOwnerPid(o) != os.Getpid() {
		t.Errorf("a removed owner that still runs is not the exiting one")
	}
}
