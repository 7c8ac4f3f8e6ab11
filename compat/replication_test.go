package compat

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/goreka/goreka/registry"
)

// nf27Items is the batch of NF §2.7 (ids from the fixture application).
func nf27Items(order *registry.Application) []ReplicationItem {
	const ts = 1699999999000
	return []ReplicationItem{
		{AppName: "ORDER-SERVICE", ID: "host-a:order-service:8080", LastDirtyTimestamp: ts, HasLastDirty: true,
			Status: "UP", Instance: &order.Instances[0], Action: ActionRegister},
		{AppName: "ORDER-SERVICE", ID: "host-a:order-service:8080", LastDirtyTimestamp: ts, HasLastDirty: true,
			Status: "UP", Action: ActionHeartbeat},
		{AppName: "ORDER-SERVICE", ID: "host-b", LastDirtyTimestamp: ts, HasLastDirty: true,
			OverriddenStatus: "OUT_OF_SERVICE", Status: "OUT_OF_SERVICE", Action: ActionHeartbeat},
		{AppName: "ORDER-SERVICE", ID: "host-c:order-service:8080", Action: ActionCancel},
		{AppName: "ORDER-SERVICE", ID: "host-b", LastDirtyTimestamp: ts, HasLastDirty: true,
			Status: "OUT_OF_SERVICE", Action: ActionStatusUpdate},
		{AppName: "ORDER-SERVICE", ID: "host-b", LastDirtyTimestamp: ts, HasLastDirty: true,
			Status: "UNKNOWN", Action: ActionDeleteStatusOverride},
	}
}

func TestReplicationListRoundTrip(t *testing.T) {
	apps := fixtureApps()
	items := nf27Items(&apps.Apps[1])
	body := AppendReplicationList(nil, items)
	got, err := DecodeReplicationList(body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, items) {
		t.Errorf("round trip differs:\ngot  %+v\nwant %+v", got, items)
	}
	// Only the keys of ReplicationInstance, ever.
	var doc struct {
		ReplicationList []map[string]json.RawMessage `json:"replicationList"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"appName": true, "id": true, "lastDirtyTimestamp": true, "overriddenStatus": true,
		"status": true, "instanceInfo": true, "action": true}
	for i, it := range doc.ReplicationList {
		for k := range it {
			if !allowed[k] {
				t.Errorf("item %d has key %q", i, k)
			}
		}
	}
	if _, ok := doc.ReplicationList[3]["lastDirtyTimestamp"]; ok {
		t.Error("cancel item carries lastDirtyTimestamp")
	}
}

func TestDecodeReplicationListNF27(t *testing.T) {
	body := `{"replicationList":[
  {"appName":"ORDER-SERVICE","id":"host-a:order-service:8080","lastDirtyTimestamp":1699999999000,
   "status":"UP","instanceInfo":{"instanceId":"host-a:order-service:8080","hostName":"host-a","app":"order-service","ipAddr":"10.0.0.11",
   "status":"UP","port":{"$":8080,"@enabled":"true"},"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}},
   "action":"Register"},
  {"appName":"ORDER-SERVICE","id":"host-a:order-service:8080","lastDirtyTimestamp":"1699999999000","status":"UP","action":"Heartbeat"},
  {"appName":"ORDER-SERVICE","id":"host-b:order-service:8080","lastDirtyTimestamp":1699999999000,
   "overriddenStatus":"OUT_OF_SERVICE","status":"OUT_OF_SERVICE","action":"Heartbeat","futureKey":{"x":1}},
  {"appName":"ORDER-SERVICE","id":"host-c:order-service:8080","action":"Cancel"},
  {"appName":"ORDER-SERVICE","id":"host-b:order-service:8080","lastDirtyTimestamp":"garbage","status":"OUT_OF_SERVICE","action":"StatusUpdate"},
  {"appName":"ORDER-SERVICE","id":"host-b:order-service:8080","lastDirtyTimestamp":1699999999000,"status":"UNKNOWN","action":"DeleteStatusOverride"},
  {"action":"Register","instanceInfo":{"port":8080}},
  42
]}`
	items, err := DecodeReplicationList([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 8 {
		t.Fatalf("got %d items, want 8", len(items))
	}
	reg := items[0]
	if reg.Action != ActionRegister || reg.Instance == nil || reg.Instance.Instance.App != "ORDER-SERVICE" ||
		reg.Instance.Instance.SecurePort != (registry.Port{Number: 7002}) || !reg.HasLastDirty {
		t.Errorf("register item: %+v", reg)
	}
	if hb := items[1]; !hb.HasLastDirty || hb.LastDirtyTimestamp != 1699999999000 || hb.Instance != nil {
		t.Errorf("heartbeat with string timestamp: %+v", hb)
	}
	if hb := items[2]; hb.OverriddenStatus != "OUT_OF_SERVICE" || hb.Action != ActionHeartbeat {
		t.Errorf("heartbeat with override: %+v", hb)
	}
	if c := items[3]; c.HasLastDirty || c.Status != "" || c.Action != ActionCancel {
		t.Errorf("cancel: %+v", c)
	}
	if su := items[4]; su.HasLastDirty || su.Action != ActionStatusUpdate {
		t.Errorf("bad timestamp must read as absent: %+v", su)
	}
	if bad := items[6]; bad.Action != ActionRegister || bad.Instance != nil {
		t.Errorf("bad instanceInfo must leave Instance nil: %+v", bad)
	}
	if !reflect.DeepEqual(items[7], ReplicationItem{}) {
		t.Errorf("non-object item: %+v", items[7])
	}
}

func TestReplicationResponses(t *testing.T) {
	apps := fixtureApps()
	rs := []ReplicationResponse{{StatusCode: 200}, {StatusCode: 409, Entity: &apps.Apps[1].Instances[0]}, {StatusCode: 404}}
	body := AppendReplicationResponses(nil, rs)
	if !strings.HasPrefix(string(body), `{"responseList":[{"statusCode":200},{"statusCode":409,"responseEntity":{"instanceId":`) {
		t.Errorf("unexpected shape: %s", body)
	}
	got, err := DecodeReplicationResponses(body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rs) {
		t.Errorf("round trip differs:\ngot  %+v\nwant %+v", got, rs)
	}
	got, err = DecodeReplicationResponses([]byte(`{"responseList":[{"statusCode":"500"},{},{"statusCode":200,"responseEntity":null},"x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []ReplicationResponse{{StatusCode: 500}, {}, {StatusCode: 200}, {}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lenient decode: got %+v, want %+v", got, want)
	}
}

func TestReplicationBadBodies(t *testing.T) {
	bodies := []string{``, `null`, `[]`, `{}`, `{"replicationList":null}`, `{"replicationList":{}}`,
		`{"replicationList":[}`, `{"replicationList":[]} trailing`, `{"responseList":[]}`}
	for _, b := range bodies {
		t.Run(b, func(t *testing.T) {
			if _, err := DecodeReplicationList([]byte(b)); err == nil {
				t.Errorf("no error for %q", b)
			}
		})
	}
	if items, err := DecodeReplicationList([]byte(`{"replicationList":[]}`)); err != nil || len(items) != 0 {
		t.Errorf("empty list: %v, %v", items, err)
	}
	if _, err := DecodeReplicationResponses([]byte(`{"replicationList":[]}`)); err == nil {
		t.Error("responses: wrong root accepted")
	}
}
