//go:build !podrun_lean

package podspec

import (
	"strings"
	"testing"
)

func TestLoadClaimAndNamespace(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // error substrings; none = valid
	}{
		{"valid", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local-path
  resources: {requests: {storage: 1Gi}}
`, nil},
		{"no modes, no storage", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {}
`, []string{"spec.accessModes: Required value: at least 1 access mode is required", "spec.resources[storage]: Required value"}},
		{"bad mode, zero size", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteSometimes]
  resources: {requests: {storage: "0"}}
`, []string{`spec.accessModes: Unsupported value: "ReadWriteSometimes"`, "spec.resources[storage]: Invalid value: \"0\": must be greater than zero"}},
		{"RWOP with others", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOncePod, ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`, []string{"may not use ReadWriteOncePod with other access modes"}},
		{"block", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  volumeMode: Block
  resources: {requests: {storage: 1Gi}}
`, []string{"spec.volumeMode: Forbidden: not supported by podrun"}},
		{"namespace", `
apiVersion: v1
kind: Namespace
metadata: {name: team}
`, nil},
		{"bad namespace name", `
apiVersion: v1
kind: Namespace
metadata: {name: Team.x}
`, []string{`metadata.name: Invalid value: "Team.x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load([]byte(tc.yaml), "m.yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Plans()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if len(m.Claims)+len(m.Namespaces) != 1 {
					t.Fatalf("loaded %d claims, %d namespaces", len(m.Claims), len(m.Namespaces))
				}
				if len(m.Claims) == 1 && (m.Claims[0].Namespace != "default" || *m.Claims[0].Spec.VolumeMode != "Filesystem") {
					t.Fatalf("defaults: %+v", m.Claims[0])
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
