// Package services holds what the Kubernetes control plane computes for
// Services, as pure functions over core/v1 objects, so that the host store
// can call them and every other package (the nftables rules, the cluster DNS,
// the kubelet's environment) reads their results:
//
//   - the registry's allocations: a ClusterIP from the service range
//     (Allocator.Allocate; stable across re-applies of the same Service) and
//     node ports from 30000-32767, with the API server's error messages;
//   - the endpoint controllers: the EndpointSlices and the legacy Endpoints
//     object of a Service from the pods of its namespace (EndpointSlices,
//     LegacyEndpoints);
//   - the kubelet's service environment variables (EnvVars).
//
// Nothing here touches the host; the store (not built yet) keeps the
// objects, and network.SyncServices and package dns consume the results.
package services
