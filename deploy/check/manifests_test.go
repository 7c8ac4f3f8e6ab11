package check

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	chart    = "../helm/goreka"
	plainDir = "../kubernetes"
)

// helm returns the helm binary: $HELM, else helm on PATH. Outside CI a
// missing helm skips; under CI=true it fails (.ci/run installs it).
func helm(t *testing.T) string {
	t.Helper()
	name := "helm"
	if h := os.Getenv("HELM"); h != "" {
		name = h
	}
	h, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found under CI=true (.ci/run installs it)", name)
		}
		t.Skip("helm not installed; .ci/run installs it")
	}
	return h
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.Bytes()
}

// objects is what one manifest set decodes to.
type objects struct {
	sts     []*appsv1.StatefulSet
	svc     []*corev1.Service
	secrets []*corev1.Secret
	pdb     []*policyv1.PodDisruptionBudget
	sm      []*monitoringv1.ServiceMonitor
	certs   []*certificate
	sa      []*corev1.ServiceAccount
	roles   []*rbacv1.Role
	rbs     []*rbacv1.RoleBinding
	croles  []*rbacv1.ClusterRole
	crbs    []*rbacv1.ClusterRoleBinding
}

// certificate is the part of cert-manager's Certificate (cert-manager.io/v1)
// the chart renders, decoded as strictly as the API types: a field the
// chart writes that is not here (a typo, a field cert-manager does not
// have) fails. cert-manager's Go module would bring its controller's
// dependencies into deploy/check for one type.
type certificate struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		SecretName  string   `json:"secretName"`
		Duration    string   `json:"duration"`
		RenewBefore string   `json:"renewBefore"`
		CommonName  string   `json:"commonName"`
		DNSNames    []string `json:"dnsNames"`
		Usages      []string `json:"usages"`
		PrivateKey  struct {
			Algorithm      string `json:"algorithm"`
			Size           int    `json:"size"`
			RotationPolicy string `json:"rotationPolicy"`
		} `json:"privateKey"`
		IssuerRef struct {
			Name  string `json:"name"`
			Kind  string `json:"kind"`
			Group string `json:"group"`
		} `json:"issuerRef"`
	} `json:"spec"`
}

// decode splits a multi-document YAML stream and decodes each document
// strictly (unknown fields, duplicate keys and wrong types fail) into the
// type of its apiVersion and kind.
func decode(stream []byte) (*objects, error) {
	o := &objects{}
	for i, doc := range bytes.Split(stream, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var into any
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 StatefulSet":
			v := &appsv1.StatefulSet{}
			o.sts, into = append(o.sts, v), v
		case "v1 Service":
			v := &corev1.Service{}
			o.svc, into = append(o.svc, v), v
		case "v1 Secret":
			v := &corev1.Secret{}
			o.secrets, into = append(o.secrets, v), v
		case "policy/v1 PodDisruptionBudget":
			v := &policyv1.PodDisruptionBudget{}
			o.pdb, into = append(o.pdb, v), v
		case "cert-manager.io/v1 Certificate":
			v := &certificate{}
			o.certs, into = append(o.certs, v), v
		case "monitoring.coreos.com/v1 ServiceMonitor":
			v := &monitoringv1.ServiceMonitor{}
			o.sm, into = append(o.sm, v), v
		case "v1 ServiceAccount":
			v := &corev1.ServiceAccount{}
			o.sa, into = append(o.sa, v), v
		case "rbac.authorization.k8s.io/v1 Role":
			v := &rbacv1.Role{}
			o.roles, into = append(o.roles, v), v
		case "rbac.authorization.k8s.io/v1 RoleBinding":
			v := &rbacv1.RoleBinding{}
			o.rbs, into = append(o.rbs, v), v
		case "rbac.authorization.k8s.io/v1 ClusterRole":
			v := &rbacv1.ClusterRole{}
			o.croles, into = append(o.croles, v), v
		case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
			v := &rbacv1.ClusterRoleBinding{}
			o.crbs, into = append(o.crbs, v), v
		default:
			return nil, fmt.Errorf("document %d: unexpected %s %s", i, tm.APIVersion, tm.Kind)
		}
		// YAML to JSON (duplicate keys fail), then Kubernetes' own JSON
		// decoder: case-sensitive, unlike encoding/json, so clusterIp for
		// clusterIP fails too.
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
		strictErrs, err := kjson.UnmarshalStrict(j, into)
		if err == nil && len(strictErrs) > 0 {
			err = errors.Join(strictErrs...)
		}
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
	}
	return o, nil
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	if i < 0 {
		return corev1.EnvVar{}, false
	}
	return c.Env[i], true
}

// checkSet asserts what the chart promises, on decoded objects.
func checkSet(t *testing.T, o *objects, replicas int32, authSecret string, persistence, monitor bool) {
	t.Helper()
	if len(o.sts) != 1 || len(o.svc) != 2 || len(o.pdb) != 1 {
		t.Fatalf("%d StatefulSets, %d Services, %d PDBs", len(o.sts), len(o.svc), len(o.pdb))
	}
	s := o.sts[0]
	var headless, clients *corev1.Service
	for _, v := range o.svc {
		if v.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = v
		} else {
			clients = v
		}
	}
	if headless == nil || clients == nil || !headless.Spec.PublishNotReadyAddresses {
		t.Fatalf("want a headless Service publishing not-ready addresses and a client Service: %+v", o.svc)
	}
	if s.Spec.ServiceName != headless.Name || s.Spec.Replicas == nil || *s.Spec.Replicas != replicas {
		t.Errorf("StatefulSet serviceName %q replicas %v", s.Spec.ServiceName, s.Spec.Replicas)
	}
	pod := s.Spec.Template
	for k, v := range headless.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("headless Service selects %s=%s, pods have %q", k, v, pod.Labels[k])
		}
	}
	for k, v := range o.pdb[0].Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("PDB selects %s=%s, pods have %q", k, v, pod.Labels[k])
		}
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	dns, _ := env(c, "GOREKA_PEERS_DNSNAME")
	_, tlsOn := env(c, "SERVER_SSL_CERTIFICATE")
	want := headless.Name + "." + headless.Namespace + ".svc.cluster.local"
	if tlsOn {
		want = "_http._tcp." + want // SRV: peers by pod DNS name, which the certificate covers
	}
	if dns.Value != want {
		t.Errorf("GOREKA_PEERS_DNSNAME = %q, want %q", dns.Value, want)
	}
	if tlsOn {
		checkTLS(t, o, c, pod.Spec, headless, clients)
	} else if len(o.certs) > 0 {
		t.Errorf("TLS off, but %d Certificates", len(o.certs))
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/actuator/health/readiness" ||
		c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/actuator/health/liveness" {
		t.Errorf("probes %+v %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	sc, psc := c.SecurityContext, pod.Spec.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("not non-root with a read-only root filesystem: %+v %+v", sc, psc)
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("resources %+v", c.Resources)
	}
	pw, ok := env(c, "SPRING_SECURITY_USER_PASSWORD")
	if authSecret == "" {
		if ok {
			t.Error("auth disabled, but a password is set")
		}
	} else if !ok || pw.ValueFrom == nil || pw.ValueFrom.SecretKeyRef == nil || pw.ValueFrom.SecretKeyRef.Name != authSecret {
		t.Errorf("password not from Secret %q: %+v", authSecret, pw)
	}
	snap, hasSnap := env(c, "GOREKA_SNAPSHOT_PATH")
	if persistence != (len(s.Spec.VolumeClaimTemplates) == 1) || persistence != hasSnap ||
		(persistence && !strings.HasPrefix(snap.Value, "/data/")) {
		t.Errorf("persistence %v: claims %d, snapshot %q", persistence, len(s.Spec.VolumeClaimTemplates), snap.Value)
	}
	if monitor != (len(o.sm) == 1) {
		t.Fatalf("ServiceMonitor: %d", len(o.sm))
	}
	if monitor {
		ep := o.sm[0].Spec.Endpoints[0]
		if ep.Path != "/actuator/prometheus" || (authSecret != "" && (ep.BasicAuth == nil || ep.BasicAuth.Password.Name != authSecret)) {
			t.Errorf("ServiceMonitor endpoint %+v", ep)
		}
		for k, v := range o.sm[0].Spec.Selector.MatchLabels {
			if headless.Labels[k] != v {
				t.Errorf("ServiceMonitor selects %s=%s, the headless Service has %q", k, v, headless.Labels[k])
			}
		}
	}
}

func TestHelmLint(t *testing.T) {
	h := helm(t)
	for _, v := range []string{"ci/default-values.yaml", "ci/all-values.yaml"} {
		run(t, h, "lint", "--strict", chart, "-f", filepath.Join(chart, v))
	}
}

func TestHelmTemplateDecodesStrictly(t *testing.T) {
	h := helm(t)
	tests := []struct {
		name                 string
		args                 []string
		replicas             int32
		secret               string
		persistence, monitor bool
	}{
		{"defaults", []string{"-f", chart + "/ci/default-values.yaml"}, 3, "goreka-auth", false, false},
		{"everything on", []string{"-f", chart + "/ci/all-values.yaml"}, 5, "goreka-auth", true, true},
		{"no auth", []string{"--set", "auth.enabled=false", "--set", "replicaCount=1", "--set", "serviceMonitor.enabled=true"}, 1, "", false, true},
		{"TLS from an existing Secret", []string{"-f", chart + "/ci/default-values.yaml", "--set", "tls.enabled=true", "--set", "tls.secretName=goreka-tls", "--set", "serviceMonitor.enabled=true"}, 3, "goreka-auth", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, h, append([]string{"template", "goreka", chart, "--namespace", "goreka"}, tc.args...)...)
			o, err := decode(out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			checkSet(t, o, tc.replicas, tc.secret, tc.persistence, tc.monitor)
		})
	}
	// TLS needs a certificate source, and need would fail kubelet's probes.
	for _, args := range [][]string{{"--set", "tls.enabled=true"}, {"--set", "tls.enabled=true", "--set", "tls.secretName=x", "--set", "tls.clientAuth=need"}} {
		cmd := exec.Command(h, append([]string{"template", "goreka", chart, "-f", chart + "/ci/default-values.yaml"}, args...)...)
		if b, err := cmd.CombinedOutput(); err == nil || !bytes.Contains(b, []byte("tls.")) {
			t.Errorf("%v rendered: %v %s", args, err, b)
		}
	}
	// The chart refuses to render without credentials.
	cmd := exec.Command(h, "template", "goreka", chart)
	if b, err := cmd.CombinedOutput(); err == nil || !bytes.Contains(b, []byte("auth.password")) {
		t.Errorf("rendered without a password: %v %s", err, b)
	}
}

// rules renders a Role's or ClusterRole's rules as "group/resource:verbs"
// lines, sorted, so that a test states the exact rights.
func rules(rs []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rs {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				v := slices.Clone(r.Verbs)
				slices.Sort(v)
				line := g + "/" + res + ":" + strings.Join(v, ",")
				if len(r.ResourceNames) > 0 {
					line += "@" + strings.Join(r.ResourceNames, ",")
				}
				out = append(out, line)
			}
		}
	}
	slices.Sort(out)
	return out
}

var (
	importRules = []string{"/services:get,list,watch", "discovery.k8s.io/endpointslices:get,list,watch"}
	// exportRules: create Leases (create cannot be narrowed to a name), get
	// and update only the group's own.
	exportRules = func(clusterID string) []string {
		return []string{"/endpoints:create,delete,get,list,update,watch", "/services:create,delete,get,list,update,watch",
			"coordination.k8s.io/leases:create", "coordination.k8s.io/leases:get,update@goreka-export-" + clusterID,
			"discovery.k8s.io/endpointslices:create,delete,get,list,update,watch"}
	}
)

// The Kubernetes bridge's values: each direction adds exactly the rights
// it needs, bound to the pods' ServiceAccount, and the properties that
// turn it on; with both off the pods get no token at all.
func TestHelmKubernetesBridge(t *testing.T) {
	h := helm(t)
	render := func(args ...string) *objects {
		t.Helper()
		out := run(t, h, append([]string{"template", "goreka", chart, "--namespace", "goreka", "-f", chart + "/ci/default-values.yaml"}, args...)...)
		o, err := decode(out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		checkSet(t, o, 3, "goreka-auth", false, false)
		return o
	}
	envOf := func(o *objects) map[string]string {
		m := map[string]string{}
		for _, e := range o.sts[0].Spec.Template.Spec.Containers[0].Env {
			if strings.HasPrefix(e.Name, "GOREKA_KUBERNETES_") {
				m[e.Name] = e.Value
			}
		}
		return m
	}
	boundTo := func(subjects []rbacv1.Subject, sa string) bool {
		return len(subjects) == 1 && subjects[0].Kind == "ServiceAccount" && subjects[0].Name == sa && subjects[0].Namespace == "goreka"
	}

	off := render()
	pod := off.sts[0].Spec.Template.Spec
	if len(off.sa)+len(off.roles)+len(off.rbs)+len(off.croles)+len(off.crbs) != 0 || len(envOf(off)) != 0 ||
		pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("bridge off: %d accounts, %d roles, %d cluster roles, env %v, automount %v", len(off.sa), len(off.roles), len(off.croles), envOf(off), pod.AutomountServiceAccountToken)
	}

	t.Run("both directions, import from every namespace", func(t *testing.T) {
		o := render("--set", "kubernetes.import.enabled=true", "--set", "kubernetes.export.enabled=true", "--set", "kubernetes.clusterId=east")
		pod := o.sts[0].Spec.Template.Spec
		if len(o.sa) != 1 || pod.ServiceAccountName != o.sa[0].Name || pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
			t.Fatalf("account %+v, pod uses %q", o.sa, pod.ServiceAccountName)
		}
		sa := o.sa[0].Name
		if len(o.croles) != 1 || !slices.Equal(rules(o.croles[0].Rules), importRules) || len(o.crbs) != 1 ||
			o.crbs[0].RoleRef.Name != o.croles[0].Name || !boundTo(o.crbs[0].Subjects, sa) {
			t.Errorf("import cluster role %+v binding %+v", o.croles, o.crbs)
		}
		if len(o.roles) != 1 || o.roles[0].Namespace != "goreka" || !slices.Equal(rules(o.roles[0].Rules), exportRules("east")) ||
			len(o.rbs) != 1 || o.rbs[0].Namespace != "goreka" || o.rbs[0].RoleRef.Name != o.roles[0].Name || !boundTo(o.rbs[0].Subjects, sa) {
			t.Errorf("export role %+v binding %+v", o.roles, o.rbs)
		}
		want := map[string]string{"GOREKA_KUBERNETES_ENABLED": "true", "GOREKA_KUBERNETES_CLUSTERID": "east",
			"GOREKA_KUBERNETES_IMPORT_ENABLED": "true", "GOREKA_KUBERNETES_IMPORT_NAMESPACES": "",
			"GOREKA_KUBERNETES_EXPORT_ENABLED": "true", "GOREKA_KUBERNETES_EXPORT_NAMESPACE": "goreka", "GOREKA_KUBERNETES_EXPORT_ENDPOINTS": "true"}
		if got := envOf(o); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("env %v, want %v", got, want)
		}
	})
	t.Run("import from two namespaces only", func(t *testing.T) {
		o := render("--set", "kubernetes.import.enabled=true", "--set", "kubernetes.import.namespaces={shop,payments}")
		if len(o.croles) != 0 || len(o.crbs) != 0 || len(o.roles) != 2 || len(o.rbs) != 2 {
			t.Fatalf("%d cluster roles, %d roles, %d bindings", len(o.croles), len(o.roles), len(o.rbs))
		}
		for i, ns := range []string{"shop", "payments"} {
			if o.roles[i].Namespace != ns || !slices.Equal(rules(o.roles[i].Rules), importRules) || o.rbs[i].Namespace != ns || !boundTo(o.rbs[i].Subjects, o.sa[0].Name) {
				t.Errorf("role in %s: %+v %+v", ns, o.roles[i], o.rbs[i])
			}
		}
		if e := envOf(o); e["GOREKA_KUBERNETES_IMPORT_NAMESPACES"] != "shop,payments" || e["GOREKA_KUBERNETES_EXPORT_ENABLED"] != "" {
			t.Errorf("env %v", e)
		}
	})
	t.Run("export to its own namespace only", func(t *testing.T) {
		o := render("--set", "kubernetes.export.enabled=true", "--set", "kubernetes.export.namespace=eureka-apps")
		if len(o.croles) != 0 || len(o.roles) != 1 || o.roles[0].Namespace != "eureka-apps" || !slices.Equal(rules(o.roles[0].Rules), exportRules("default")) {
			t.Fatalf("roles %+v cluster roles %d", o.roles, len(o.croles))
		}
		// A cluster id that is no lower-case DNS name would name a Lease
		// the Role does not (goreka adds a hash to such an id): refused.
		cmd := exec.Command(h, "template", "goreka", chart, "-f", chart+"/ci/default-values.yaml", "--set", "kubernetes.export.enabled=true", "--set", "kubernetes.clusterId=East")
		if b, err := cmd.CombinedOutput(); err == nil || !bytes.Contains(b, []byte("kubernetes.clusterId")) {
			t.Errorf("clusterId=East rendered: %v %s", err, b)
		}
		if e := envOf(o); e["GOREKA_KUBERNETES_EXPORT_NAMESPACE"] != "eureka-apps" || e["GOREKA_KUBERNETES_IMPORT_ENABLED"] != "" {
			t.Errorf("env %v", e)
		}
	})
}

// The plain manifests are the chart rendered with deploy/kubernetes's
// values (make manifests writes them); they must decode strictly and not
// drift from the chart.
func TestPlainManifests(t *testing.T) {
	plain, err := os.ReadFile(filepath.Join(plainDir, "goreka.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := decode(plain)
	if err != nil {
		t.Fatal(err)
	}
	checkSet(t, o, 3, "goreka-auth", false, false)
	h := helm(t)
	out := run(t, h, "template", "goreka", chart, "--namespace", "goreka", "-f", filepath.Join(plainDir, "values.yaml"))
	if !bytes.Equal(bytes.TrimSpace(out), bytes.TrimSpace(plain)) {
		t.Error("deploy/kubernetes/goreka.yaml differs from the chart's rendering; run make manifests")
	}
}

// Strict decoding does catch what it is for.
func TestDecodeRejectsUnknownFields(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  replica: 3\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  clusterIp: None\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec:\n  endpoints:\n    - port: http\n      pth: /metrics\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
	} {
		if _, err := decode([]byte(doc)); err == nil {
			t.Errorf("accepted:\n%s", doc)
		}
	}
}

// promtool returns the promtool binary, skipping or failing as helm does
// (Debian's prometheus package ships it; .ci/run installs it).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found under CI=true (.ci/run installs Debian's prometheus package)")
		}
		t.Skip("promtool not installed")
	}
	return p
}

// The alerting rules are valid and each alert's promtool unit test passes.
func TestPrometheusRules(t *testing.T) {
	p := promtool(t)
	run(t, p, "check", "rules", "../observability/goreka-alerts.yaml")
	out := run(t, p, "test", "rules", "../observability/goreka-alerts-test.yaml")
	if !bytes.Contains(out, []byte("SUCCESS")) {
		t.Fatalf("promtool test rules: %s", out)
	}
	// One unit test per alert.
	rules, _ := os.ReadFile("../observability/goreka-alerts.yaml")
	tests, _ := os.ReadFile("../observability/goreka-alerts-test.yaml")
	for _, l := range strings.Split(string(rules), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(l), "- alert: "); ok {
			if !bytes.Contains(tests, []byte("alertname: "+name+"\n")) {
				t.Errorf("alert %s has no promtool test", name)
			}
		}
	}
}

// checkTLS: probes and peers over HTTPS, the Secret mounted whole (so
// that its renewal reaches goreka), and a Certificate, when rendered, for
// every name clients and peers use.
func checkTLS(t *testing.T, o *objects, c corev1.Container, spec corev1.PodSpec, headless, clients *corev1.Service) {
	t.Helper()
	if c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || c.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("probes not over HTTPS: %q %q", c.ReadinessProbe.HTTPGet.Scheme, c.LivenessProbe.HTTPGet.Scheme)
	}
	for _, n := range []string{"GOREKA_PEERS_DNSSRV", "EUREKA_CLIENT_TLS_ENABLED", "EUREKA_CLIENT_TLS_TRUSTSTORE", "SERVER_SSL_CERTIFICATEPRIVATEKEY"} {
		if _, ok := env(c, n); !ok {
			t.Errorf("TLS on, but %s is not set", n)
		}
	}
	mi := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "tls" })
	vi := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "tls" })
	if mi < 0 || vi < 0 || c.VolumeMounts[mi].SubPath != "" || spec.Volumes[vi].Secret == nil {
		t.Fatalf("the TLS Secret is not mounted whole: mounts %+v volumes %+v", c.VolumeMounts, spec.Volumes)
	}
	secret := spec.Volumes[vi].Secret.SecretName
	for _, sm := range o.sm {
		ep := sm.Spec.Endpoints[0]
		if ep.Scheme == nil || *ep.Scheme != "https" || ep.TLSConfig == nil || ep.TLSConfig.CA.Secret == nil || ep.TLSConfig.CA.Secret.Name != secret {
			t.Errorf("ServiceMonitor does not scrape over HTTPS with the CA of %s: %+v", secret, ep)
		}
	}
	if len(o.certs) == 0 {
		return // an existing Secret (tls.secretName)
	}
	cert := o.certs[0]
	if len(o.certs) != 1 || cert.Spec.SecretName != secret || cert.Spec.IssuerRef.Name == "" {
		t.Fatalf("Certificate %+v for Secret %s", cert.Spec, secret)
	}
	ns := headless.Namespace
	for _, name := range []string{clients.Name + "." + ns + ".svc", clients.Name + "." + ns + ".svc.cluster.local", headless.Name + "." + ns + ".svc",
		"goreka-0." + headless.Name + "." + ns + ".svc.cluster.local"} {
		if !covers(cert.Spec.DNSNames, name) {
			t.Errorf("the Certificate does not cover %s: %q", name, cert.Spec.DNSNames)
		}
	}
}

// covers matches a DNS name against names with a leading wildcard label.
func covers(names []string, host string) bool {
	for _, n := range names {
		if n == host {
			return true
		}
		if rest, ok := strings.CutPrefix(n, "*."); ok {
			if _, tail, ok := strings.Cut(host, "."); ok && tail == rest {
				return true
			}
		}
	}
	return false
}
