//go:build !podrun_lean

package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const walkthroughServices = `
apiVersion: v1
kind: Service
metadata:
  name: myservice
spec:
  ports:
  - protocol: TCP
    port: 80
    targetPort: 9376
---
apiVersion: v1
kind: Service
metadata:
  name: mydb
spec:
  ports:
  - port: 80
    targetPort: 9377
`

func loadServices(t *testing.T, yaml string) []*corev1.Service {
	t.Helper()
	// Load wants a pod in every file; the Services ride along with one.
	m, err := Load([]byte(yaml+"\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: busybox}]}\n"), "svc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m.Services
}

func TestServiceDefaults(t *testing.T) {
	svcs := loadServices(t, walkthroughServices)
	if len(svcs) != 2 {
		t.Fatalf("got %d services, want 2", len(svcs))
	}
	db := svcs[1]
	if db.Namespace != "default" || db.Spec.Type != corev1.ServiceTypeClusterIP || db.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("defaults: namespace %q type %q sessionAffinity %q", db.Namespace, db.Spec.Type, db.Spec.SessionAffinity)
	}
	p := db.Spec.Ports[0]
	if p.Protocol != corev1.ProtocolTCP || p.TargetPort != intstr.FromInt32(9377) {
		t.Errorf("port defaults: %+v", p)
	}
	if db.Spec.InternalTrafficPolicy == nil || *db.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster {
		t.Errorf("internalTrafficPolicy %v, want Cluster", db.Spec.InternalTrafficPolicy)
	}

	svcs = loadServices(t, `
apiVersion: v1
kind: Service
metadata: {name: sticky}
spec:
  type: NodePort
  sessionAffinity: ClientIP
  clusterIP: None
  ports: [{port: 53, protocol: UDP, name: dns}]
`)
	s := svcs[0]
	if s.Spec.SessionAffinityConfig == nil || *s.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds != 10800 {
		t.Errorf("sessionAffinityConfig %+v, want the 10800 s default", s.Spec.SessionAffinityConfig)
	}
	if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Errorf("externalTrafficPolicy %q, want Cluster", s.Spec.ExternalTrafficPolicy)
	}
	if len(s.Spec.ClusterIPs) != 1 || s.Spec.ClusterIPs[0] != "None" {
		t.Errorf("clusterIPs %v, want [None]", s.Spec.ClusterIPs)
	}
	if s.Spec.Ports[0].TargetPort != intstr.FromInt32(53) {
		t.Errorf("targetPort %v, want the port", s.Spec.Ports[0].TargetPort)
	}
}

func TestValidateService(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string // each must appear; none means valid
	}{
		{"walkthrough", `{ports: [{port: 80, targetPort: 9376}]}`, nil},
		{"named target port", `{selector: {app: web}, ports: [{name: http, port: 80, targetPort: web}]}`, nil},
		{"headless without ports", `{clusterIP: None, selector: {app: db}}`, nil},
		{"headless without selector", `{clusterIP: None, ipFamilyPolicy: RequireDualStack}`, nil},
		{"ExternalName", `{type: ExternalName, externalName: example.com.}`, nil},
		{"LoadBalancer", `{type: LoadBalancer, ports: [{port: 443}]}`, nil},
		{"ClientIP", `{sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}, ports: [{port: 80}]}`, nil},
		{"no ports", `{selector: {app: a}}`, []string{"spec.ports: Required value"}},
		{"second port needs a name", `{ports: [{name: a, port: 80}, {port: 81}]}`, []string{"spec.ports[1].name: Required value"}},
		{"duplicate port names", `{ports: [{name: a, port: 80}, {name: a, port: 81}]}`, []string{`spec.ports[1].name: Duplicate value: "a"`}},
		{"duplicate ports", `{ports: [{name: a, port: 80}, {name: b, port: 80}]}`, []string{"spec.ports[1]: Duplicate value"}},
		{"same port, other protocol", `{ports: [{name: a, port: 53}, {name: b, port: 53, protocol: UDP}]}`, nil},
		{"port out of range", `{ports: [{port: 70000}]}`, []string{"spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"}},
		{"bad protocol", `{ports: [{port: 80, protocol: HTTP}]}`, []string{`spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`}},
		{"bad target port name", `{ports: [{port: 80, targetPort: Web_Port}]}`, []string{`spec.ports[0].targetPort: Invalid value: "Web_Port"`}},
		{"bad selector", `{selector: {"a b": c}, ports: [{port: 80}]}`, []string{`spec.selector: Invalid value: "a b"`}},
		{"nodePort on ClusterIP", `{ports: [{port: 80, nodePort: 30080}]}`, []string{"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"}},
		{"NodePort headless", `{type: NodePort, clusterIP: None, ports: [{port: 80}]}`, []string{`spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for NodePort services`}},
		{"ExternalName without name", `{type: ExternalName}`, []string{"spec.externalName: Required value"}},
		{"ExternalName with clusterIP", `{type: ExternalName, externalName: a.b, clusterIP: 10.216.0.5}`, []string{"spec.clusterIPs: Forbidden: may not be set for ExternalName services"}},
		{"bad type", `{type: Magic, ports: [{port: 80}]}`, []string{`spec.type: Unsupported value: "Magic"`}},
		{"bad clusterIP", `{clusterIP: 10.0.0.300, ports: [{port: 80}]}`, []string{`spec.clusterIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address`}},
		{"IPv6 clusterIP", `{clusterIP: "fd00::1", ports: [{port: 80}]}`, []string{`spec.clusterIPs[0]: Invalid value: "fd00::1": not configured on this cluster`}},
		{"dual-stack", `{ipFamilyPolicy: RequireDualStack, ports: [{port: 80}]}`, []string{"this cluster is not configured for dual-stack services"}},
		{"affinity timeout", `{sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 0}}, ports: [{port: 80}]}`,
			[]string{"spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400"}},
		{"affinity config without ClientIP", `{sessionAffinityConfig: {clientIP: {timeoutSeconds: 5}}, ports: [{port: 80}]}`, nil}, // defaulting drops it
		{"bad affinity", `{sessionAffinity: Cookie, ports: [{port: 80}]}`, []string{`spec.sessionAffinity: Unsupported value: "Cookie"`}},
		{"kubelet port on LoadBalancer", `{type: LoadBalancer, ports: [{port: 10250}]}`, []string{"may not expose port 10250 externally since it is used by kubelet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := loadServices(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: "+tc.spec+"\n")[0]
			errs := ValidateService(svc)
			got := errs.ToAggregate()
			if len(tc.want) == 0 {
				if got != nil {
					t.Fatalf("unexpected errors: %v", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("errors %q do not contain %q", got.Error(), w)
				}
			}
		})
	}
}

func TestServiceName(t *testing.T) {
	m, err := Load([]byte(`
apiVersion: v1
kind: Service
metadata: {name: 1svc}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: busybox}]}
`), "svc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Plans()
	if err == nil || !strings.Contains(err.Error(), `svc.yaml: service "1svc": metadata.name: Invalid value: "1svc": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character`) {
		t.Fatalf("got %v, want the DNS-1035 name error", err)
	}
}

func TestServiceUnknownField(t *testing.T) {
	_, err := Load([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  port: 80\n"), "svc.yaml")
	if err == nil || !strings.Contains(err.Error(), `spec.port: unknown field "port"`) {
		t.Fatalf("got %v, want the strict decoding error", err)
	}
}
