package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/goreka/goreka/health"
	"github.com/goreka/goreka/registry"
)

// reporterFunc is a Reporter for tests.
type reporterFunc func(app, id, reporter, reason string) (health.ReportOutcome, error)

func (f reporterFunc) Report(app, id, reporter, reason string) (health.ReportOutcome, error) {
	return f(app, id, reporter, reason)
}

func TestReportsEndpoint(t *testing.T) {
	reg := registry.New(registry.Options{})
	s := New(Config{}, Deps{Registry: reg})
	type call struct{ app, id, reporter, reason string }
	var calls []call
	s.MountReports(reporterFunc(func(app, id, reporter, reason string) (health.ReportOutcome, error) {
		calls = append(calls, call{app, id, reporter, reason})
		switch id {
		case "nope":
			return "", registry.ErrNotFound
		case "flood":
			return health.ReportLimited, nil
		}
		return health.ReportProbing, nil
	}))
	for _, tc := range []struct {
		body string
		code int
		text string
	}{
		{`{"app":"svc","instanceId":"a","reason":"connect timed out"}`, 202, `{"outcome":"probing"}`},
		{`{"app":"svc","instanceId":"nope"}`, 404, "unknown instance SVC/nope"},
		{`{"app":"svc","instanceId":"flood"}`, 429, "too many reports"},
		{`{"instanceId":"a"}`, 400, "missing app"},
		{`{"app":"svc","instanceId":" "}`, 400, "missing instanceId"},
		{`{"app":"svc","instanceId":7}`, 400, "not a JSON object"},
		{`not json`, 400, "not a JSON object"},
		{`{"app":"svc","instanceId":"a"} {}`, 400, "data after"},
		{`{"app":"svc","instanceId":"a","reason":"` + strings.Repeat("x", 20<<10) + `"}`, 400, "larger than"},
	} {
		n := len(calls)
		req := httptest.NewRequest(http.MethodPost, ReportsPath, strings.NewReader(tc.body))
		req.RemoteAddr = "10.1.2.3:5555"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.text) {
			t.Errorf("%.60s: %d %q, want %d %q", tc.body, w.Code, w.Body.String(), tc.code, tc.text)
		}
		if tc.code == 400 && len(calls) != n {
			t.Errorf("%.60s: a bad body reached the reporter", tc.body)
		}
	}
	if calls[0] != (call{"svc", "a", "10.1.2.3", "connect timed out"}) {
		t.Fatalf("first call %+v", calls[0])
	}
	if reg.Revision() != 0 {
		t.Fatal("a report changed the registry")
	}
}
