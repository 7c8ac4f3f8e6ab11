package kube

import (
	"errors"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels and annotations on the objects goreka writes to Kubernetes.
const (
	// LabelManagedBy is the EndpointSlice manager label; the built-in
	// EndpointSlice controller leaves slices of another manager alone.
	LabelManagedBy = discoveryv1.LabelManagedBy
	// ManagedBy is goreka's value of LabelManagedBy (also set on the
	// Services and Endpoints it writes).
	ManagedBy = "goreka.io"
	// LabelClusterID carries the cluster id of the goreka group that
	// wrote an object.
	LabelClusterID = "goreka.io/cluster-id"
	// AnnotationOwner is set to the cluster id on every object goreka
	// created: goreka changes or deletes only objects whose label and
	// annotation both name its own cluster id.
	AnnotationOwner = "goreka.io/owner"
	// LabelServiceName links an EndpointSlice to its Service.
	LabelServiceName = discoveryv1.LabelServiceName
	// LabelSkipMirror keeps the mirroring controller from copying an
	// Endpoints object into EndpointSlices.
	LabelSkipMirror = discoveryv1.LabelSkipMirror
)

// Metadata keys of the instances goreka imports from Kubernetes.
const (
	// MetaSource is set on every imported instance; the exporter skips
	// instances that carry it.
	MetaSource = "goreka.source"
	// SourceKubernetes is MetaSource's value for imported instances.
	SourceKubernetes = "kubernetes"
	// MetaClusterID is the importing group's cluster id.
	MetaClusterID = "goreka.cluster-id"
	MetaNamespace = "k8s-namespace" // the Service's Kubernetes namespace
	MetaService   = "k8s-service"   // the Service's name
	MetaZone      = "zone"          // the endpoint's zone
	MetaGRPCPort  = "gRPC_port"     // the port named grpc
)

// ManagedByGoreka reports whether an object's labels say some goreka group
// wrote it.
func ManagedByGoreka(labels map[string]string) bool { return labels[LabelManagedBy] == ManagedBy }

// OwnedBy reports whether an object's labels say the goreka group with
// this cluster id wrote it.
func OwnedBy(labels map[string]string, clusterID string) bool {
	return ManagedByGoreka(labels) && labels[LabelClusterID] == clusterID
}

// Owns reports whether the group with this cluster id may change or delete
// an object: it must carry both goreka's labels and its annotation.
func Owns(labels, annotations map[string]string, clusterID string) bool {
	return OwnedBy(labels, clusterID) && annotations[AnnotationOwner] == clusterID
}

// Imported reports whether an instance's metadata says goreka imported it.
func Imported(metadata map[string]string) bool { return metadata[MetaSource] != "" }

// ValidLabelValue checks a label value (the cluster id is one).
func ValidLabelValue(v string) error {
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
