// Package podspec turns manifest bytes into validated pod plans the runtime
// can trust, answering as the Kubernetes API server and kubelet would.
//
//   - Load decodes multi-document YAML or JSON (Pods, Jobs, ConfigMaps,
//     Secrets, Lists of them) strictly, naming file, line and field path of
//     every problem, and applies the API server's defaults.
//   - Manifest.Plans validates every pod as the API server does on create
//     (plus the fields podrun cannot honour, see Unsupported) and computes the
//     effective resources and QoS class.
//   - Plan.ContainerEnv, FieldRefValue, ResourceFieldRefValue, Expand and
//     CommandLine compute what the kubelet and containerd would give a
//     container: its environment and its command line.
//
// Built with the tag podrun_lean (podrun-shim), podspec has only its runtime
// half: Plan, NewPlan (the plan of a pod's record, not validated again), the
// environment, command line, resources and sysctl admission; the loader, the
// validation and DiffPodUpdate are the CLI's (files marked !podrun_lean).
//
// podspec imports only k8s.io/api, k8s.io/apimachinery, sigs.k8s.io/yaml and
// the standard library.
package podspec
