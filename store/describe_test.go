package store

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/podspec"
)

func TestDescribe(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir(), CgroupParent: "/from-flags"}
	pod := testPod("web")
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	podspec.SetDefaults(pod)
	for _, tc := range []struct {
		name     string
		settings Settings
		cgroup   string
	}{
		{"the record's cgroup parent", Settings{CgroupParent: "/ci", CgroupDriver: "cgroupfs"}, "/ci/pod" + string(pod.UID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := CreateRecord(l, pod, &Objects{}, tc.settings, "h")
			if err != nil {
				t.Fatal(err)
			}
			NewEventLog(rec.Paths.EventsFile(), time.Now).Add("Normal", "Scheduled", "", "assigned %s", "web")
			rec, _ = rec.Reload(l)
			info, err := Describe(l, rec)
			if err != nil {
				t.Fatal(err)
			}
			if info.CgroupPath != tc.cgroup {
				t.Errorf("cgroup %q, want %q", info.CgroupPath, tc.cgroup)
			}
			if q := info.Requests[corev1.ResourceCPU]; q.String() != "100m" {
				t.Errorf("requests %v", info.Requests)
			}
			if len(info.Events) != 1 || info.Events[0].Message != "assigned web" {
				t.Errorf("events %+v", info.Events)
			}
		})
	}
}
