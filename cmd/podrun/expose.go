package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podrun/podrun/store"
)

// exposeCommand is kubectl expose (pkg/cmd/expose): a Service for a pod, a
// Deployment, a ReplicaSet or another Service, its selector and ports taken
// from the object unless given, stored as `create` stores what it makes.
func exposeCommand() *cli.Command {
	return &cli.Command{
		Name:      "expose",
		Usage:     "create a Service for a pod, deployment, replicaset or service",
		ArgsUsage: "TYPE NAME | TYPE/NAME [--port=PORT] [--target-port=PORT|NAME] [--name=NAME] [--type=TYPE]",
		Description: `Examples:
  # A Service for the pods of a Deployment, port 80 to their 8080
  podrun expose deployment web --port=80 --target-port=8080

  # A NodePort Service for a pod, on the ports its containers declare
  podrun expose pod/db --type=NodePort`,
		Flags: generatorFlags(
			&cli.StringFlag{Name: "port", Usage: "the Service's port (default: the exposed object's ports)"},
			&cli.StringFlag{Name: "target-port", Usage: "the port (number or name) the Service sends to (default: --port)"},
			&cli.StringFlag{Name: "protocol", Usage: "TCP, UDP or SCTP (default: the container port's, else TCP)"},
			&cli.StringFlag{Name: "name", Usage: "the Service's name (default: the object's)"},
			&cli.StringFlag{Name: "type", Value: "ClusterIP", Usage: "ClusterIP, NodePort or LoadBalancer"},
			&cli.StringFlag{Name: "selector", Usage: "the Service's selector (default: the object's)"},
			&cli.StringFlag{Name: "cluster-ip", Usage: "the ClusterIP (None: a headless Service)"},
			&cli.StringFlag{Name: "labels", Aliases: []string{"l"}, Usage: "the Service's labels (default: the object's)"},
		),
		Action: runExpose,
	}
}

func runExpose(c *cli.Context) error {
	target, err := oneTarget(c, "expose")
	if err != nil {
		return err
	}
	l := layout(c)
	ns, name := namespace(c), target.name
	var selector, objLabels map[string]string
	var ports []corev1.ContainerPort
	if target.kind == "Pod" {
		rec, err := findPod(l, ns, name)
		if err != nil {
			return failed("%v", err)
		}
		selector, objLabels = rec.Pod.Labels, rec.Pod.Labels
		for _, ct := range rec.Pod.Spec.Containers {
			ports = append(ports, ct.Ports...)
		}
	} else {
		k, _ := store.KindFor(target.kind) // oneTarget found it
		obj, err := l.Get(k, target.namespace, name)
		if err != nil {
			return failed("%v", err)
		}
		objLabels = obj.GetLabels()
		var sel *metav1.LabelSelector
		var tmpl *corev1.PodTemplateSpec
		switch o := obj.(type) {
		case *corev1.Service:
			selector = o.Spec.Selector
			for _, p := range o.Spec.Ports {
				ports = append(ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: p.Protocol})
			}
		case *appsv1.Deployment:
			sel, tmpl = o.Spec.Selector, &o.Spec.Template
		case *appsv1.ReplicaSet:
			sel, tmpl = o.Spec.Selector, &o.Spec.Template
		default:
			return failed("cannot expose a %s", k.Name)
		}
		if sel != nil {
			if len(sel.MatchExpressions) > 0 {
				return failed("couldn't retrieve selectors via --selector flag or introspection: the %s's selector has matchExpressions, which a Service cannot take", k.Name)
			}
			selector = sel.MatchLabels
		}
		if tmpl != nil {
			for _, ct := range tmpl.Spec.Containers {
				ports = append(ports, ct.Ports...)
			}
		}
	}
	if s := c.String("selector"); s != "" {
		m, err := parsePairs(s)
		if err != nil {
			return usageError("--selector: %v", err)
		}
		selector = m
	}
	if len(selector) == 0 {
		return failed("couldn't retrieve selectors via --selector flag or introspection: the object has no labels to select")
	}
	if s := c.String("labels"); s != "" {
		m, err := parsePairs(s)
		if err != nil {
			return usageError("--labels: %v", err)
		}
		objLabels = m
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: objLabels},
		Spec:       corev1.ServiceSpec{Selector: selector, Type: corev1.ServiceType(c.String("type")), ClusterIP: c.String("cluster-ip")},
	}
	if n := c.String("name"); n != "" {
		svc.Name = n
	}
	protocol := corev1.Protocol(strings.ToUpper(c.String("protocol")))
	// ServiceGeneratorV2: --port gives one port; else every port of the
	// object, named port-1, port-2… when there are several.
	if p := c.String("port"); p != "" {
		port, err := strconv.ParseInt(p, 10, 32)
		if err != nil || port <= 0 || port > 65535 {
			return usageError("--port %q: want a port number", p)
		}
		sp := corev1.ServicePort{Port: int32(port), Protocol: protocol, TargetPort: intstr.FromInt32(int32(port))}
		if len(ports) == 1 && protocol == "" {
			sp.Protocol = ports[0].Protocol
		}
		svc.Spec.Ports = []corev1.ServicePort{sp}
	} else {
		for i, cp := range ports {
			sp := corev1.ServicePort{Port: cp.ContainerPort, Protocol: cp.Protocol, TargetPort: intstr.FromInt32(cp.ContainerPort)}
			if protocol != "" {
				sp.Protocol = protocol
			}
			if len(ports) > 1 {
				sp.Name = fmt.Sprintf("port-%d", i+1)
			}
			svc.Spec.Ports = append(svc.Spec.Ports, sp)
		}
	}
	if len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		return failed("couldn't find port via --port flag or introspection")
	}
	if tp := c.String("target-port"); tp != "" {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].TargetPort = intstr.Parse(tp)
		}
	}
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Protocol == "" {
			svc.Spec.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	return createGenerated(c, store.ServiceKind, "service", svc, "exposed")
}

// parsePairs reads kubectl's K=V,K=V.
func parsePairs(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid pair %q: want KEY=VALUE", kv)
		}
		out[k] = v
	}
	return out, nil
}
