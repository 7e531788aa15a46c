package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/store"
)

// kubectlResources are the names kubectl knows for the built-in resource
// types (kubectl api-resources: plural, singular and short names) that podrun
// does not keep. A verb's first word that is one of them names that type, as
// with kubectl, never a pod: `podrun get deploy` is not a pod called "deploy".
// Kinds that join store.Kinds are found there first.
var kubectlResources = map[string]bool{}

func init() {
	for _, names := range []string{
		"bindings binding", "componentstatuses componentstatus cs", "limitranges limitrange limits",
		"namespaces namespace ns", "nodes node no", "persistentvolumeclaims persistentvolumeclaim pvc",
		"persistentvolumes persistentvolume pv", "podtemplates podtemplate",
		"replicationcontrollers replicationcontroller rc", "resourcequotas resourcequota quota",
		"serviceaccounts serviceaccount sa", "mutatingwebhookconfigurations mutatingwebhookconfiguration",
		"validatingwebhookconfigurations validatingwebhookconfiguration",
		"customresourcedefinitions customresourcedefinition crd crds", "apiservices apiservice",
		"controllerrevisions controllerrevision", "daemonsets daemonset ds", "deployments deployment deploy",
		"replicasets replicaset rs", "statefulsets statefulset sts", "horizontalpodautoscalers horizontalpodautoscaler hpa",
		"cronjobs cronjob cj", "jobs job", "certificatesigningrequests certificatesigningrequest csr",
		"leases lease", "ingressclasses ingressclass",
		"ingresses ingress ing", "networkpolicies networkpolicy netpol", "runtimeclasses runtimeclass",
		"poddisruptionbudgets poddisruptionbudget pdb", "clusterrolebindings clusterrolebinding",
		"clusterroles clusterrole", "rolebindings rolebinding", "roles role",
		"csidrivers csidriver", "csinodes csinode",
		"storageclasses storageclass sc", "volumeattachments volumeattachment",
	} {
		for _, n := range strings.Fields(names) {
			kubectlResources[n] = true
		}
	}
}

// checkResourceType refuses, as kubectl does, a first argument that names a
// resource type podrun does not keep ("deploy", "jobs/x", "nodes",
// "deployments.apps"). podrun also takes bare pod names, so a word that is
// the name of an existing pod of the namespace (isPod) stays that pod.
func checkResourceType(args []string, isPod func(name string) bool) error {
	if len(args) == 0 {
		return nil
	}
	word, _, typed := strings.Cut(args[0], "/")
	if _, ok := store.KindFor(word); ok {
		return nil
	}
	if !typed && isPod != nil && isPod(word) {
		return nil
	}
	base, _, _ := strings.Cut(word, ".")
	if _, ok := store.KindFor(base); ok {
		return nil // deployments.apps
	}
	if kubectlResources[strings.ToLower(base)] {
		return cli.Exit("the server doesn't have a resource type \""+word+"\" (podrun keeps pods and "+keptKinds()+")", exitFailed)
	}
	return nil
}

func keptKinds() string {
	var out []string
	for _, k := range store.Kinds {
		out = append(out, k.Plural)
	}
	return strings.Join(out, ", ")
}

// podExists is checkResourceType's isPod for the command's namespace.
func podExists(c *cli.Context) func(string) bool {
	return func(name string) bool {
		rec, err := findPod(layout(c), namespace(c), name)
		return err == nil && rec != nil
	}
}
