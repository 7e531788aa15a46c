//go:build !podrun_lean

package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDiffPodUpdate(t *testing.T) {
	base := func() *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{
			NodeName:       "host",
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}},
			Containers:     []corev1.Container{{Name: "a", Image: "busybox:1"}, {Name: "b", Image: "busybox:1"}},
		}}
		p.Name, p.Labels = "p", map[string]string{"app": "x"}
		return p
	}
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name   string
		old    func(*corev1.Pod)
		change func(*corev1.Pod)
		want   PodUpdate
		err    string
	}{
		{name: "nothing", change: func(p *corev1.Pod) { p.Spec.NodeName = "" }},
		{name: "labels", change: func(p *corev1.Pod) { p.Labels["app"] = "y" }, want: PodUpdate{Meta: true}},
		{name: "annotations", change: func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }, want: PodUpdate{Meta: true}},
		{name: "finalizer removed", old: func(p *corev1.Pod) { p.Finalizers = []string{"example.com/f"} },
			change: func(p *corev1.Pod) { p.Finalizers = nil }, want: PodUpdate{Meta: true}},
		{name: "finalizer removed while deleting", old: func(p *corev1.Pod) {
			p.Finalizers, p.DeletionTimestamp = []string{"example.com/f", "example.com/g"}, &metav1.Time{}
		}, change: func(p *corev1.Pod) { p.Finalizers = []string{"example.com/g"} }, want: PodUpdate{Meta: true}},
		{name: "finalizer added while deleting", old: func(p *corev1.Pod) {
			p.Finalizers, p.DeletionTimestamp = []string{"example.com/f"}, &metav1.Time{}
		}, change: func(p *corev1.Pod) { p.Finalizers = []string{"example.com/f", "example.com/g"} },
			err: `The Pod "p" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/g"}`},
		{name: "images", change: func(p *corev1.Pod) {
			p.Spec.Containers[1].Image = "busybox:2"
			p.Spec.InitContainers[0].Image = "busybox:2"
		}, want: PodUpdate{Images: []string{"init", "b"}}},
		{name: "deadline set", change: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(10) }, want: PodUpdate{Deadline: true}},
		{name: "deadline lowered", old: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(10) },
			change: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(5) }, want: PodUpdate{Deadline: true}},
		{name: "deadline raised", old: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(10) },
			change: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(20) },
			err:    `The Pod "p" is invalid: spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value`},
		{name: "deadline removed", old: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(10) },
			change: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			err:    "must not update from a positive integer to nil value"},
		{name: "tolerations added", change: func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Exists"}} },
			want: PodUpdate{Tolerations: true}},
		{name: "toleration added before the existing ones, one's seconds changed", old: func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "t", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: i64(300)}}
		}, change: func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Exists"}, {Key: "t", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: i64(60)}}
		}, want: PodUpdate{Tolerations: true}},
		{name: "toleration removed", old: func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "t", Operator: "Exists"}}
		}, change: func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Exists"}} },
			err: `The Pod "p" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds`},
		{name: "command", change: func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"sh"} },
			err: "The Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"},
		{name: "a container more", change: func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c", Image: "x"})
		},
			err: "pod updates may not change fields other than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := base(), base()
			if tc.old != nil {
				tc.old(old)
				tc.old(updated)
			}
			tc.change(updated)
			got, err := DiffPodUpdate(old, updated)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.Images, ",") != strings.Join(tc.want.Images, ",") || got.Meta != tc.want.Meta || got.Deadline != tc.want.Deadline || got.Tolerations != tc.want.Tolerations {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			merged := ApplyPodUpdate(old, updated)
			if merged.Spec.NodeName != "host" || merged.Labels["app"] != updated.Labels["app"] || merged.Spec.Containers[1].Image != updated.Spec.Containers[1].Image {
				t.Fatalf("ApplyPodUpdate = %+v", merged)
			}
		})
	}
}
