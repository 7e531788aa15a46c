package printers

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestServiceRow(t *testing.T) {
	now := time.Now()
	created := metav1.NewTime(now.Add(-90 * time.Second))
	for _, tc := range []struct {
		name string
		svc  corev1.Service
		wide bool
		want string
	}{
		{"clusterip", corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "myservice", CreationTimestamp: created},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.237", Ports: []corev1.ServicePort{{Port: 80, Protocol: "TCP"}}}},
			false, "myservice ClusterIP 10.96.0.237 <none> 80/TCP 90s"},
		{"headless wide", corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", CreationTimestamp: created},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{{Port: 5432, Protocol: "TCP"}}}},
			true, "db ClusterIP None <none> 5432/TCP 90s app=db"},
		{"nodeport", corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: created},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.5", Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: "TCP"}, {Port: 53, NodePort: 30053, Protocol: "UDP"}}}},
			false, "web NodePort 10.96.0.5 <none> 80:30080/TCP,53:30053/UDP 90s"},
		{"loadbalancer pending", corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lb", CreationTimestamp: created},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.6", Ports: []corev1.ServicePort{{Port: 443, NodePort: 31443, Protocol: "TCP"}}}},
			false, "lb LoadBalancer 10.96.0.6 <pending> 443:31443/TCP 90s"},
		{"externalname", corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext", CreationTimestamp: created},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}},
			false, "ext ExternalName <none> example.com <none> 90s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(ServiceRow(&tc.svc, tc.wide, now), " "); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEndpointsRow(t *testing.T) {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}, {IP: "10.0.0.3"}, {IP: "10.0.0.4"}},
		Ports:     []corev1.EndpointPort{{Port: 8080}},
	}}}
	if got := EndpointsRow(ep, time.Now())[1]; got != "10.0.0.1:8080,10.0.0.2:8080,10.0.0.3:8080 + 1 more..." {
		t.Errorf("got %q", got)
	}
	if got := EndpointsRow(&corev1.Endpoints{}, time.Now())[1]; got != "<none>" {
		t.Errorf("empty: %q", got)
	}
}

func TestDescribeService(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "myservice", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.237", ClusterIPs: []string{"10.96.0.237"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{Port: 80, Protocol: "TCP", TargetPort: intstr.FromInt32(9376)}}}}
	var b bytes.Buffer
	DescribeService(&b, svc, nil)
	for _, want := range []string{"Name:              myservice\n", "IP:                10.96.0.237\n", "Port:              <unset>  80/TCP\n", "TargetPort:        9376/TCP\n", "Endpoints:         <none>\n", "Session Affinity:  None\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}
}
