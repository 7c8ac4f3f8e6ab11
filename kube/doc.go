// Package kube is the base of goreka's Kubernetes bridge (issue 27): its
// configuration (goreka.kubernetes.*), the client to the API server
// (in-cluster or a kubeconfig file), the labels, annotations and metadata
// keys by which the two directions recognise what goreka wrote and what it
// imported, and the bridge's metrics.
//
// The import direction (Kubernetes -> Eureka) is package kube/importer; the
// export direction (Eureka -> Kubernetes) writes Services, EndpointSlices
// and Endpoints marked with the labels below. Both keep to one contract, so
// that neither ping-pongs with the other and two goreka groups with
// different cluster ids on one API server leave each other alone:
//
//   - an instance goreka imported carries the metadata MetaSource =
//     SourceKubernetes, MetaClusterID = the cluster id, MetaNamespace and
//     MetaService; the exporter skips every instance with MetaSource set;
//   - an object goreka exported carries LabelManagedBy = ManagedBy and
//     LabelClusterID = the cluster id, and AnnotationOwner; the importer
//     never imports an object that OwnedBy its own cluster id.
//
// The package is named kube so that it does not clash with client-go's
// kubernetes package.
package kube
