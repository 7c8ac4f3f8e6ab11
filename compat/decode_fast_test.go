package compat

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// fastCorpus is JSON the decoders meet: every encoder's documents and
// instances, the register and edge-case bodies of the decode tests, and
// hand-written cases of what encoding/json does its own way.
func fastCorpus() []string {
	var out []string
	for _, codecs := range []Codecs{{}, {JSON: Jackson}} {
		for _, compact := range []bool{false, true} {
			out = append(out, string(codecs.AppendApplications(nil, JSON, compact, fixtureApps())))
		}
	}
	f := fixtureApps()
	for i := range f.Apps {
		for j := range f.Apps[i].Instances {
			out = append(out, string(AppendInstance(nil, JSON, &f.Apps[i].Instances[j])))
		}
	}
	out = append(out,
		`{"instance":{"hostName":"h","app":"a","HOSTNAME":"x"}}`,
		`{"instance":{"hostName":"h","app":"a","overriddenstatus":"DOWN","overriddenStatus":"UP"}}`,
		`{"instance":{"port":{"$":1},"port":{"@enabled":"false"}}}`,
		`{"instance":{"port":{"$":1},"port":null,"port":{"@enabled":"true"}}}`,
		`{"instance":{"metadata":{"a":"1","a":null,"b":null,"b":"2","@class":"x"}}}`,
		`{"instance":{"metadata":{"a":"1"},"metadata":{"c":"3"}}}`,
		`{"instance":{"metadata":{}}}`,
		`{"instance":{"metadata":null}}`,
		`{"instance":{"hostName":"h\u00e9\n"}}`,
		`{"instance":{"hostName":"é日本🙂"}}`,
		"{\"instance\":{\"hostName\":\"\xff\"}}",
		`{"instance":{"countryId":-0.5e+3,"isCoordinatingDiscoveryServer":true,"sid":false}}`,
		`{"instance":{"countryId":01}}`,
		`{"instance":{"countryId":1.}}`,
		`{"instance":{"hostName":"h",}}`,
		`{"instance":{}, "instance":null}`,
		`{"instance":null, "instance":{"app":"x"}}`,
		`{"other":[1,{"a":[true,false,null,"\\\"\/\b\f\n\r\t\u0041"]}],"instance":{"x":{"y":[[]]}}}`,
		` {"instance":{"app":"a"}} `,
		`{"instance":{"app":"a"}} x`,
		`{"instance":{"leaseInfo":{"durationInSecs":"90","renewalTimestamp":5,"evictionTimestamp":null}}}`,
		`{"instance":{"dataCenterInfo":{"@class":"com.netflix.appinfo.AmazonInfo","metadata":{"instance-id":"i-1"}}}}`,
		`{"instance":{"dataCenterInfo":{"name":"MyOwn","Name":"Amazon"}}}`,
		`{"instance":{"ſid":"x"}}`,
		`{"applications":{"application":{"name":"A","instance":{"hostName":"h"}}}}`,
		`{"applications":{"application":[{"name":"A","instance":[]},{"name":"B"}],"versions__delta":3}}`,
		`{"applications":{"application":[null]}}`,
		`{"applications":{"application":null,"apps__hashcode":"UP_1_"}}`,
		`{"applications":{"Application":[]}}`,
		`{"applications":[]}`,
		`{"applications":{"application":[{"instance":{"port":1}}]}}`,
		`{"replicationList":[]}`,
		`{"replicationList":null}`,
		`{"replicationList":[{"appName":"A","id":"i","lastDirtyTimestamp":"12","action":"Heartbeat"},{},7]}`,
		`{"replicationList":[{"appName":"A","id":"i","lastDirtyTimestamp":12,"status":"UP","overriddenStatus":"UNKNOWN","action":"Heartbeat"}]}`,
		`{"replicationList":[{"appName":"A","id":"i","lastDirtyTimestamp":"x","action":"Cancel"}]}`,
		`{"replicationList":[{"appName":"A","APPNAME":"B","action":"Cancel"}]}`,
		`{"replicationList":[{"appName":"A","instanceInfo":{"hostName":"h","app":"A"},"instanceInfo":null,"action":"Register"}]}`,
		`{"replicationList":[{"appName":"A","instanceInfo":null,"instanceInfo":{"hostName":"h","app":"A","port":{"$":1}},"action":"Register"}]}`,
		`{"replicationList":[{"appName":"A","instanceInfo":{"hostName":"h","port":{"$":"x"}},"action":"Register"}]}`,
		`{"replicationList":[{"appName":"A","instanceInfo":"x","action":"Register"}]}`,
		`{"replicationList":[{"extra":[1,{"a":null}],"id":"i"}],"other":1}`,
		strings.Repeat(`{"instance":`, 50)+`{}`+strings.Repeat(`}`, 50),
		`{"instance":{"a":`+strings.Repeat(`[`, 1200)+strings.Repeat(`]`, 1200)+`}}`,
	)
	return out
}

// agree checks one body: when the fast reader answers, encoding/json must
// read the same (and succeed).
func agree(t *testing.T, body []byte) {
	t.Helper()
	var fw wireInstance
	if fastInstance(body, &fw) {
		sw, err := slowInstance(body)
		if err != nil {
			t.Fatalf("fast reader accepted what encoding/json rejects (%v): %.200q", err, body)
		}
		if !reflect.DeepEqual(fw, sw) {
			t.Fatalf("instance readers disagree on %.200q\nfast %+v\nslow %+v", body, fw, sw)
		}
	}
	if fi, ok := fastReplicationList(body); ok {
		si, err := slowReplicationList(body)
		if err != nil {
			t.Fatalf("fast reader accepted a batch encoding/json rejects (%v): %.200q", err, body)
		}
		if !reflect.DeepEqual(fi, si) {
			t.Fatalf("batch readers disagree on %.200q\nfast %+v\nslow %+v", body, fi, si)
		}
	}
	var fd jsonApplications
	if fastApplications(body, &fd) {
		sd, err := slowApplications(body)
		if err != nil {
			t.Fatalf("fast reader accepted what encoding/json rejects (%v): %.200q", err, body)
		}
		if !reflect.DeepEqual(normalizeDoc(fd), normalizeDoc(sd)) {
			t.Fatalf("applications readers disagree on %.200q\nfast %+v\nslow %+v", body, fd, sd)
		}
	}
}

// normalizeDoc treats an empty list like encoding/json's (nil or empty: the
// decoder only uses the length).
func normalizeDoc(d jsonApplications) jsonApplications {
	if len(d.Application) == 0 {
		d.Application = nil
	}
	for i := range d.Application {
		if len(d.Application[i].Instance) == 0 {
			d.Application[i].Instance = nil
		}
	}
	return d
}

func TestFastDecoderAgrees(t *testing.T) {
	corpus := fastCorpus()
	accepted := 0
	for _, b := range corpus {
		agree(t, []byte(b))
		var w wireInstance
		var d jsonApplications
		_, batch := fastReplicationList([]byte(b))
		if fastInstance([]byte(b), &w) || fastApplications([]byte(b), &d) || batch {
			accepted++
		}
	}
	if accepted < len(corpus)/3 {
		t.Fatalf("the fast reader answered only %d of %d bodies", accepted, len(corpus))
	}
	// Mutations: flip, drop and insert bytes in valid bodies.
	rng := rand.New(rand.NewPCG(11, 12))
	alphabet := []byte(`{}[]:,"\ 0123456789.eE+-ntrufalsx` + "\x00\x1f\xc3\xa9")
	for _, base := range corpus[:12] {
		for range 300 {
			b := []byte(base)
			for range 1 + rng.IntN(3) {
				if len(b) == 0 {
					break
				}
				j := rng.IntN(len(b))
				switch rng.IntN(3) {
				case 0:
					b[j] = alphabet[rng.IntN(len(alphabet))]
				case 1:
					b = append(b[:j], b[j+1:]...)
				default:
					b = append(b[:j], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[j:]...)...)
				}
			}
			agree(t, b)
		}
	}
	// A registry the size of a start-up sync, and a register body, take the
	// fast path.
	big := AppendApplications(nil, JSON, false, registry10k())
	var d jsonApplications
	if !fastApplications(big, &d) {
		t.Fatal("the fast reader gave up on a 10k registry")
	}
	agree(t, big)
	var w wireInstance
	if !fastInstance(AppendInstance(nil, JSON, &registry10k().Apps[0].Instances[0]), &w) {
		t.Fatal("the fast reader gave up on a register body")
	}
	// So does a batch of the registrations this server sends its peers.
	batch := AppendReplicationList(nil, replicationBatch250())
	if _, ok := fastReplicationList(batch); !ok {
		t.Fatal("the fast reader gave up on a batch of 250 registrations")
	}
	agree(t, batch)
}

func FuzzFastDecoderAgrees(f *testing.F) {
	for _, b := range fastCorpus() {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) { agree(t, body) })
}
