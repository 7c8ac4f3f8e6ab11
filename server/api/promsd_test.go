package api

import (
	"encoding/json"
	"testing"

	"github.com/goreka/goreka/registry"
)

func TestPrometheusSD(t *testing.T) {
	f := newFixture(t, Config{})
	a := inst("ORDERS", "o1")
	a.Metadata = map[string]string{"prometheus.path": "/actuator/prometheus", "prometheus.port": "9100", "zone-name": "a"}
	a.CountryID = 1
	a.HomePageURL, a.StatusPageURL, a.HealthCheckURL = "http://o1/", "http://o1/info", "http://o1/health"
	a.DataCenterInfo = registry.DataCenterInfo{Name: registry.DataCenterAmazon, Metadata: map[string]string{"availability-zone": "eu-1a"}}
	f.register(a)
	off := inst("ORDERS", "o2")
	off.Metadata = map[string]string{"prometheus.scrape": "false"}
	f.register(off)
	bad := inst("BILLING", "plain")
	bad.Metadata = map[string]string{"prometheus.port": "99999"}
	bad.Status = registry.StatusDown
	if _, err := f.reg.SetStatic([]*registry.Instance{bad}); err != nil { // a static registration
		t.Fatal(err)
	}

	var got []TargetGroup
	if code := f.get(Prefix+"/prometheus-sd", &got); code != 200 {
		t.Fatal(code)
	}
	want := []TargetGroup{
		{Targets: []string{"plain.local:8080"}, Labels: map[string]string{
			"instance":                                            "plain",
			"__meta_eureka_app_name":                              "BILLING",
			"__meta_eureka_app_instance_hostname":                 "plain.local",
			"__meta_eureka_app_instance_homepage_url":             "",
			"__meta_eureka_app_instance_statuspage_url":           "",
			"__meta_eureka_app_instance_healthcheck_url":          "",
			"__meta_eureka_app_instance_ip_addr":                  "10.0.0.1",
			"__meta_eureka_app_instance_vip_address":              "billing",
			"__meta_eureka_app_instance_secure_vip_address":       "billing-secure",
			"__meta_eureka_app_instance_status":                   "DOWN",
			"__meta_eureka_app_instance_country_id":               "0",
			"__meta_eureka_app_instance_id":                       "plain",
			"__meta_eureka_app_instance_port":                     "8080",
			"__meta_eureka_app_instance_port_enabled":             "true",
			"__meta_eureka_app_instance_secure_port":              "8443",
			"__meta_eureka_app_instance_secure_port_enabled":      "false",
			"__meta_eureka_app_instance_datacenterinfo_name":      "MyOwn",
			"__meta_eureka_app_instance_metadata_prometheus_port": "99999",
			"__meta_goreka_lifecycle":                             "up",
			"__meta_goreka_static":                                "true",
		}},
		{Targets: []string{"o1.local:9100"}, Labels: map[string]string{
			"instance":                                                             "o1",
			"__metrics_path__":                                                     "/actuator/prometheus",
			"__meta_eureka_app_name":                                               "ORDERS",
			"__meta_eureka_app_instance_hostname":                                  "o1.local",
			"__meta_eureka_app_instance_homepage_url":                              "http://o1/",
			"__meta_eureka_app_instance_statuspage_url":                            "http://o1/info",
			"__meta_eureka_app_instance_healthcheck_url":                           "http://o1/health",
			"__meta_eureka_app_instance_ip_addr":                                   "10.0.0.1",
			"__meta_eureka_app_instance_vip_address":                               "orders",
			"__meta_eureka_app_instance_secure_vip_address":                        "orders-secure",
			"__meta_eureka_app_instance_status":                                    "UP",
			"__meta_eureka_app_instance_country_id":                                "1",
			"__meta_eureka_app_instance_id":                                        "o1",
			"__meta_eureka_app_instance_port":                                      "8080",
			"__meta_eureka_app_instance_port_enabled":                              "true",
			"__meta_eureka_app_instance_secure_port":                               "8443",
			"__meta_eureka_app_instance_secure_port_enabled":                       "false",
			"__meta_eureka_app_instance_datacenterinfo_name":                       "Amazon",
			"__meta_eureka_app_instance_datacenterinfo_metadata_availability_zone": "eu-1a",
			"__meta_eureka_app_instance_datacenterinfo_metadata_instance_id":       "o1",
			"__meta_eureka_app_instance_metadata_prometheus_path":                  "/actuator/prometheus",
			"__meta_eureka_app_instance_metadata_prometheus_port":                  "9100",
			"__meta_eureka_app_instance_metadata_zone_name":                        "a",
			"__meta_goreka_lifecycle":                                              "up",
			"__meta_goreka_static":                                                 "false",
		}},
	}
	gb, _ := json.MarshalIndent(got, "", " ")
	wb, _ := json.MarshalIndent(want, "", " ")
	if string(gb) != string(wb) {
		t.Errorf("got %s\nwant %s", gb, wb)
	}
	got = nil
	f.get(Prefix+"/prometheus-sd?status=UP", &got)
	if len(got) != 1 || got[0].Targets[0] != "o1.local:9100" {
		t.Errorf("status=UP: %+v", got)
	}
}
