package api

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// The metadata convention of the Prometheus endpoint: an instance's
// metadata may say how it is scraped.
const (
	// MetaScrape "false" leaves the instance out of the targets.
	MetaScrape = "prometheus.scrape"
	// MetaPath is the metrics path (__metrics_path__).
	MetaPath = "prometheus.path"
	// MetaPort is the port to scrape, instead of the instance's port
	// (ignored unless it is a number from 1 to 65535).
	MetaPort = "prometheus.port"
)

// The labels Prometheus' own eureka_sd gives a target
// (discovery/eureka/eureka.go in prometheus/prometheus), plus goreka's.
const (
	metaEureka   = "__meta_eureka_"
	metaInstance = metaEureka + "app_instance_"
	// goreka's additions
	metaGorekaLifecycle = "__meta_goreka_lifecycle"
	metaGorekaStatic    = "__meta_goreka_static"
)

// TargetGroup is one entry of Prometheus' HTTP service discovery format.
type TargetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// prometheusSD answers GET /prometheus-sd: one target group per instance,
// in (application, id) order, the instances selected by the same filters
// as GET /instances.
func (a *API) prometheusSD(c *gin.Context) {
	q, err := params(c, "app", "status", "vip", "svip", "lifecycle", "metadata.")
	if err != nil {
		answerError(c, err)
		return
	}
	f, lc, err := parseFilter(q)
	if err != nil {
		answerError(c, err)
		return
	}
	now := a.cfg.Now()
	_, es := a.idx.Select(f, nil, -1)
	out := make([]TargetGroup, 0, len(es))
	for _, en := range es {
		v := a.live(en)
		l := LifecycleOf(v, now)
		if lc != "" && l != lc {
			continue
		}
		in := v.Instance
		if in.Metadata[MetaScrape] == "false" {
			continue
		}
		port := in.Port.Number
		if p, err := strconv.Atoi(in.Metadata[MetaPort]); err == nil && p >= 1 && p <= 65535 {
			port = p
		}
		labels := map[string]string{
			metaEureka + "app_name":              in.App,
			metaInstance + "hostname":            in.HostName,
			metaInstance + "homepage_url":        in.HomePageURL,
			metaInstance + "statuspage_url":      in.StatusPageURL,
			metaInstance + "healthcheck_url":     in.HealthCheckURL,
			metaInstance + "ip_addr":             in.IPAddr,
			metaInstance + "vip_address":         in.VIPAddress,
			metaInstance + "secure_vip_address":  in.SecureVIPAddress,
			metaInstance + "status":              string(in.Status),
			metaInstance + "country_id":          strconv.Itoa(in.CountryID),
			metaInstance + "id":                  in.InstanceID,
			metaInstance + "port":                strconv.Itoa(in.Port.Number),
			metaInstance + "port_enabled":        strconv.FormatBool(in.Port.Enabled),
			metaInstance + "secure_port":         strconv.Itoa(in.SecurePort.Number),
			metaInstance + "secure_port_enabled": strconv.FormatBool(in.SecurePort.Enabled),
			metaInstance + "datacenterinfo_name": in.DataCenterInfo.Name,
			metaGorekaLifecycle:                  string(l),
			metaGorekaStatic:                     strconv.FormatBool(v.Static),
		}
		if in.InstanceID != "" {
			labels["instance"] = in.InstanceID // eureka_sd sets it from instanceId too
		}
		for k, val := range in.DataCenterInfo.Metadata {
			labels[metaInstance+"datacenterinfo_metadata_"+sanitizeLabel(k)] = val
		}
		for k, val := range in.Metadata {
			labels[metaInstance+"metadata_"+sanitizeLabel(k)] = val
		}
		if p := in.Metadata[MetaPath]; p != "" {
			labels["__metrics_path__"] = p
		}
		out = append(out, TargetGroup{
			Targets: []string{net.JoinHostPort(in.HostName, strconv.Itoa(port))},
			Labels:  labels,
		})
	}
	c.JSON(http.StatusOK, out)
}

// sanitizeLabel is Prometheus' strutil.SanitizeLabelName: every character
// outside [a-zA-Z0-9_] becomes '_'.
func sanitizeLabel(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
