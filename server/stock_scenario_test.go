package server

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/goreka/goreka/compat"
)

// The stock scenario is one REST script run twice: against a stock Java
// Eureka server by the capture tool (stock_capture_test.go, build tag
// "capture"), whose answers are stored under testdata/stock/<target>/, and
// against goreka by TestStockFidelity, whose answers must equal them byte for
// byte after stockNormalize. Changing the script means re-capturing:
//
//	go test -tags capture -run TestCaptureStock ./server/
//
// (it builds and starts compat/stock-server itself; see that file).

// stockStep is one write of the script.
type stockStep struct {
	method, path, body string
	want               int
}

func stockRegister(app, body string) stockStep {
	return stockStep{method: "POST", path: "/eureka/apps/" + app, body: body, want: 204}
}

// stockSteps registers instances that cover every field the encoders write
// (optional fields present and absent, sid, app group, Amazon data center,
// empty and escaped metadata, every status), overrides one, and registers
// and cancels one so that the delta holds ADDED, MODIFIED and DELETED.
var stockSteps = []stockStep{
	stockRegister("ORDER-SERVICE", `{"instance":{"instanceId":"host-a:order-service:8080","hostName":"host-a","app":"ORDER-SERVICE","ipAddr":"10.0.0.11","status":"UP",
	  "port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},"countryId":1,
	  "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
	  "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90},"metadata":{"management.port":"8080","zone":"z1"},
	  "homePageUrl":"http://host-a:8080/","statusPageUrl":"http://host-a:8080/actuator/info","healthCheckUrl":"http://host-a:8080/actuator/health",
	  "vipAddress":"order-service","secureVipAddress":"order-service","lastDirtyTimestamp":"1764500000000"}}`),
	stockRegister("ORDER-SERVICE", `{"instance":{"instanceId":"host-b:order-service:8080","hostName":"host-b","app":"ORDER-SERVICE","appGroupName":"SHOP","ipAddr":"10.0.0.12","sid":"sid-7","status":"DOWN",
	  "port":{"$":8080,"@enabled":"true"},"securePort":{"$":8443,"@enabled":"true"},"countryId":1,
	  "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
	  "leaseInfo":{"renewalIntervalInSecs":10,"durationInSecs":30},"metadata":{"@class":"java.util.Collections$EmptyMap"},
	  "secureHealthCheckUrl":"https://host-b:8443/health","isCoordinatingDiscoveryServer":"true",
	  "vipAddress":"order-service,orders","secureVipAddress":"secure-orders","lastDirtyTimestamp":"1764500000001"}}`),
	stockRegister("ORDER-SERVICE", `{"instance":{"instanceId":"host-c:order-service:8080","hostName":"host-c","app":"ORDER-SERVICE","ipAddr":"10.0.0.14","status":"STARTING",
	  "port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},"countryId":1,
	  "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
	  "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90},
	  "metadata":{"a_b":"quote \" amp & lt < gt > apos ' slash / back \\","$dollar":"tab\tnl\ncr\r","ünïcode":"é 日本 🙂"},
	  "vipAddress":"order-service","secureVipAddress":"order-service","lastDirtyTimestamp":"1764500000003"}}`),
	stockRegister("PAYMENT", `{"instance":{"instanceId":"i-0abc","hostName":"ip-10-0-0-13.ec2.internal","app":"PAYMENT","ipAddr":"10.0.0.13","status":"UP",
	  "port":{"$":9090,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},"countryId":1,
	  "dataCenterInfo":{"@class":"com.netflix.appinfo.AmazonInfo","name":"Amazon","metadata":{"instance-id":"i-0abc","availability-zone":"us-east-1a","ami-id":"ami-1","public-ipv4":"54.1.2.3","local-ipv4":"10.0.0.13","public-hostname":"ec2-54-1-2-3.compute.amazonaws.com","instance-type":"m5.large"}},
	  "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90},"metadata":{"weight":"3"},
	  "vipAddress":"payment","secureVipAddress":"payment","asgName":"payment-asg","lastDirtyTimestamp":"1764500000002"}}`),
	stockRegister("PAYMENT", `{"instance":{"instanceId":"pay-2","hostName":"pay-2","app":"PAYMENT","ipAddr":"10.0.0.15","status":"UNKNOWN",
	  "port":{"$":9090,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},"countryId":1,
	  "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
	  "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90},"metadata":{"weight":"1"},
	  "vipAddress":"payment","lastDirtyTimestamp":"1764500000004"}}`),
	stockRegister("GONE", `{"instance":{"instanceId":"gone-1","hostName":"gone-1","app":"GONE","ipAddr":"10.0.0.16","status":"UP",
	  "port":{"$":7001,"@enabled":"true"},"securePort":{"$":7002,"@enabled":"false"},"countryId":1,
	  "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
	  "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90},"vipAddress":"gone","lastDirtyTimestamp":"1764500000005"}}`),
	{method: "PUT", path: "/eureka/apps/PAYMENT/i-0abc/status?value=OUT_OF_SERVICE", want: 200},
	{method: "DELETE", path: "/eureka/apps/GONE/gone-1", want: 200},
}

// stockRead is one read of the script; name is its golden file's base name.
type stockRead struct{ name, path string }

// stockReads are every read endpoint; each is fetched in JSON and XML, full
// and compact.
var stockReads = []stockRead{
	{"apps", "/eureka/apps/"},
	{"app", "/eureka/apps/ORDER-SERVICE"},
	{"delta", "/eureka/apps/delta"},
	{"vip", "/eureka/vips/order-service"},
	{"svip", "/eureka/svips/secure-orders"},
	{"instance-up", "/eureka/apps/ORDER-SERVICE/host-a:order-service:8080"},
	{"instance-down", "/eureka/apps/ORDER-SERVICE/host-b:order-service:8080"},
	{"instance-starting", "/eureka/apps/ORDER-SERVICE/host-c:order-service:8080"},
	{"instance-oos", "/eureka/apps/PAYMENT/i-0abc"},
	{"instance-unknown", "/eureka/apps/PAYMENT/pay-2"},
	{"instances-oos", "/eureka/instances/i-0abc"},
	{"instances-unknown", "/eureka/instances/pay-2"},
}

// stockEmptyReads are fetched before the first step, from the empty registry.
var stockEmptyReads = []stockRead{
	{"apps-empty", "/eureka/apps/"},
	{"delta-empty", "/eureka/apps/delta"},
}

// stockFetch is one request of the script: a read in one format and form.
type stockFetch struct {
	file string // golden file name
	path string
	hdr  map[string]string
}

func stockFetches(reads []stockRead) []stockFetch {
	var out []stockFetch
	for _, r := range reads {
		for _, format := range []string{"json", "xml"} {
			for _, compact := range []bool{false, true} {
				hdr := map[string]string{"Accept": "application/" + format}
				name := r.name
				if compact {
					hdr["X-Eureka-Accept"] = "compact"
					name += ".compact"
				}
				out = append(out, stockFetch{file: name + "." + format, path: r.path, hdr: hdr})
			}
		}
	}
	return out
}

// stockTarget is one stock server configuration and where its captures live.
type stockTarget struct {
	dir    string        // under testdata/stock
	line   string        // compat/stock-server's STOCK_LINE: "4" (SCN 4.3.0) or "5" (SCN 5.0.x)
	args   []string      // extra Spring arguments for the stock server
	codecs compat.Codecs // goreka's equivalent of args
	// deliberate lists where goreka writes other bytes on purpose: each
	// is applied to the captured answer before the comparison.
	deliberate []stockDeliberate
	// regions: the server has the remote region of stock_regions_test.go
	// (stockRemote), and stockRegionReads are fetched last.
	regions bool
	// held: the target runs the held-lease scenario of stock_held_test.go
	// (TestStockHeldLease) instead of this one; args are stockHeldArgs.
	held bool
}

// stockDeliberate replaces old by new in the captured answers of files
// with the given suffix, for the reason given.
type stockDeliberate struct {
	suffix, old, new, why string
}

// jacksonCodecs is the goreka side of the two codec properties.
var jacksonCodecs = compat.Codecs{JSON: compat.Jackson, XML: compat.Jackson}

var jacksonArgs = []string{"--eureka.server.json-codec-name=JacksonJson", "--eureka.server.xml-codec-name=JacksonXml"}

// jacksonDeliberate: Jackson XML writes a metadata key that is no XML name
// as it is, which no parser reads; goreka uses XStream's escape.
var jacksonDeliberate = []stockDeliberate{
	{".xml", "<$dollar>", "<_-dollar>", "a metadata key that is no XML name"},
	{".xml", "</$dollar>", "</_-dollar>", "the same key's end tag"},
}

// eureka206Deliberate: eureka 2.0.6 added Applications.isRegisteredApplicationsEmpty(),
// a helper that Jackson's bean serialisation writes as a property in every
// document it writes (compact, JacksonJson, JacksonXml; not the legacy
// codecs). It repeats what the application list already says; goreka
// follows 2.0.4, which every 2.0.x client reads, and leaves it out.
var eureka206Deliberate = []stockDeliberate{
	{".json", `"registeredApplicationsEmpty":true,`, "", "2.0.6's accidental property"},
	{".json", `"registeredApplicationsEmpty":false,`, "", "2.0.6's accidental property"},
	{".xml", "<registeredApplicationsEmpty>true</registeredApplicationsEmpty>", "", "2.0.6's accidental property"},
	{".xml", "<registeredApplicationsEmpty>false</registeredApplicationsEmpty>", "", "2.0.6's accidental property"},
}

var stockTargets = []stockTarget{
	{dir: "eureka-2.0.4", line: "4"},
	{dir: "eureka-2.0.4-jackson", line: "4", args: jacksonArgs, codecs: jacksonCodecs, deliberate: jacksonDeliberate},
	{dir: "eureka-2.0.6", line: "5", deliberate: eureka206Deliberate},
	{dir: "eureka-2.0.6-jackson", line: "5", args: jacksonArgs, codecs: jacksonCodecs,
		deliberate: append(slices.Clone(jacksonDeliberate), eureka206Deliberate...)},
	{dir: "eureka-2.0.4-regions", line: "4", regions: true},
	{dir: "eureka-2.0.4-held", line: "4", args: stockHeldArgs, held: true},
	{dir: "eureka-2.0.6-held", line: "5", args: stockHeldArgs, held: true},
}

// stockTimestamp matches the values of the timestamp fields, which are the
// servers' clocks and legitimately differ: 13-digit epoch millis in JSON
// ("key":"123…" or "key":123…) and XML (<key>123…</key>). Zero stays.
var stockTimestamp = regexp.MustCompile(`((?:"|<)(?:registrationTimestamp|lastRenewalTimestamp|serviceUpTimestamp|evictionTimestamp|lastUpdatedTimestamp)(?:":"?|>))[1-9][0-9]{12}`)

// stockNormalize replaces what legitimately differs between two servers
// given the same script: the timestamps taken from each server's clock.
func stockNormalize(b []byte) []byte {
	return stockTimestamp.ReplaceAll(b, []byte("${1}TIMESTAMP"))
}

// stockAnswer is what the capture stores per fetch: the status line and
// content type before the body, so that a 404 or a changed media type is a
// difference too.
func stockAnswer(code int, contentType string, body []byte) []byte {
	return append([]byte(fmt.Sprintf("%d %s\n", code, contentType)), stockNormalize(body)...)
}

// stockDeltaVersion matches the value of versions__delta in JSON and XML.
var stockDeltaVersion = regexp.MustCompile(`((?:"|<)versions__delta(?:":"|>))-?[0-9]+`)
