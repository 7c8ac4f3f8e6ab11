// Package check holds the tests of deploy/: the Helm chart is linted and
// rendered with helm, and every rendered and plain manifest is decoded
// strictly into the Kubernetes API types (k8s.io/api, and the Prometheus
// operator's ServiceMonitor), so that an unknown or misspelled field fails.
// It is its own module so that k8s.io/api stays out of goreka's go.mod; run
// it with `make deploy-check` (CI does).
package check
