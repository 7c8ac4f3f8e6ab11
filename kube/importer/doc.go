// Package importer is the Kubernetes bridge's import direction (issue 27):
// every endpoint of a Service's EndpointSlices becomes a lease-less
// instance (registry.Import) of the application named after the Service,
// upper-cased, in goreka's default namespace or, with namespace-mode
// namespaces, in the goreka namespace named after the Service's.
//
// The mapping (Instances) is pure: instance id = the endpoint's pod name
// (targetRef), else ip:port; ipAddr and hostName = its first address; the
// port = the slice's port named import.port-name, else its first; status
// UP when ready, OUT_OF_SERVICE when terminating or explicitly not
// serving, DOWN otherwise; metadata goreka.source=kubernetes,
// goreka.cluster-id, k8s-namespace, k8s-service, zone and gRPC_port (the
// port named grpc). Slices and Services that goreka's own export wrote
// with this cluster id (kube.OwnedBy) are not imported; an endpoint
// without addresses, a slice without the port, are skipped with a log
// line.
//
// Restart and outage safety: additions and changes apply as soon as the
// informers deliver them; nothing is removed before every informer has
// synced and goreka.kubernetes.resync-grace has passed since (on the
// injected clock). A restored snapshot's imported instances are swept only
// then. While the API server answers 403 or is away, the informers keep
// their last state and retry: goreka keeps serving what it imported and
// removes nothing until a new list succeeded.
package importer
