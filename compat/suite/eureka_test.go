//go:build compat

package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// eurekaAPI talks to the server under test directly (not through a client's proxy).
type eurekaAPI struct {
	base string // ".../eureka/", with the trailing slash
	auth string // "user:pass" or ""
}

var httpc = &http.Client{Timeout: 5 * time.Second}

func (e eurekaAPI) do(method, path string, body []byte, accept string) (int, []byte, error) {
	req, err := http.NewRequest(method, e.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if u, p, ok := strings.Cut(e.auth, ":"); ok {
		req.SetBasicAuth(u, p)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

type wireInstance struct {
	InstanceID string         `json:"instanceId"`
	Status     string         `json:"status"`
	Metadata   map[string]any `json:"metadata"`
	LeaseInfo  struct {
		DurationInSecs int `json:"durationInSecs"`
	} `json:"leaseInfo"`
}

// leaseDuration is the lease duration the server holds for one instance (leaseInfo.durationInSecs).
func (e eurekaAPI) leaseDuration(app, id string) (time.Duration, error) {
	code, b, err := e.do(http.MethodGet, instPath(app, id), nil, "application/json")
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %d %s", instPath(app, id), code, b)
	}
	var body struct {
		Instance wireInstance `json:"instance"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return 0, fmt.Errorf("GET %s: %w: %s", instPath(app, id), err, b)
	}
	if body.Instance.LeaseInfo.DurationInSecs <= 0 {
		return 0, fmt.Errorf("GET %s: no leaseInfo.durationInSecs: %s", instPath(app, id), b)
	}
	return time.Duration(body.Instance.LeaseInfo.DurationInSecs) * time.Second, nil
}

// instances returns "id STATUS" for every instance of app, sorted; an unknown app is an empty list.
func (e eurekaAPI) instances(app string) ([]string, error) {
	code, b, err := e.do(http.MethodGet, "apps/"+strings.ToUpper(app), nil, "application/json")
	if err != nil {
		return nil, err
	}
	if code == http.StatusNotFound {
		return nil, nil
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET apps/%s: %d %s", app, code, b)
	}
	var body struct {
		Application struct {
			Instance []wireInstance `json:"instance"`
		} `json:"application"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, fmt.Errorf("GET apps/%s: %w: %s", app, err, b)
	}
	var out []string
	for _, in := range body.Application.Instance {
		out = append(out, in.InstanceID+" "+in.Status)
	}
	sort.Strings(out)
	return out, nil
}

// hash returns the apps__hashcode of the full registry.
func (e eurekaAPI) hash() (string, error) {
	code, b, err := e.do(http.MethodGet, "apps/", nil, "application/json")
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("GET apps/: %d", code)
	}
	var body struct {
		Applications struct {
			Hash string `json:"apps__hashcode"`
		} `json:"applications"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return "", fmt.Errorf("GET apps/: %w", err)
	}
	return body.Applications.Hash, nil
}

// register posts an instance the way a Spring client does (numbers, booleans, nulls).
func (e eurekaAPI) register(app, id string, port int) error {
	now := time.Now().UnixMilli()
	vip := strings.ToLower(app)
	inst := map[string]any{"instance": map[string]any{
		"instanceId": id, "app": strings.ToUpper(app), "appGroupName": nil, "ipAddr": "127.0.0.1", "sid": "na",
		"homePageUrl":    fmt.Sprintf("http://localhost:%d/", port),
		"statusPageUrl":  fmt.Sprintf("http://localhost:%d/actuator/info", port),
		"healthCheckUrl": fmt.Sprintf("http://localhost:%d/actuator/health", port),
		"vipAddress":     vip, "secureVipAddress": vip, "countryId": 1,
		"dataCenterInfo": map[string]any{"@class": "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", "name": "MyOwn"},
		"hostName":       "localhost", "status": "UP", "overriddenStatus": "UNKNOWN",
		"leaseInfo":                     map[string]any{"renewalIntervalInSecs": 30, "durationInSecs": 90},
		"isCoordinatingDiscoveryServer": false, "lastUpdatedTimestamp": now, "lastDirtyTimestamp": now,
		"port":       map[string]any{"$": port, "@enabled": "true"},
		"securePort": map[string]any{"$": 443, "@enabled": "false"},
		"metadata":   map[string]string{"origin": "compat-driver"},
	}}
	b, _ := json.Marshal(inst)
	code, body, err := e.do(http.MethodPost, "apps/"+strings.ToUpper(app), b, "")
	if err != nil {
		return err
	}
	if code != http.StatusNoContent {
		return fmt.Errorf("register %s/%s: want 204, got %d %s", app, id, code, body)
	}
	return nil
}

// call does method on path and wants status want.
func (e eurekaAPI) call(method, path string, want int) error {
	code, body, err := e.do(method, path, nil, "")
	if err != nil {
		return err
	}
	if code != want {
		return fmt.Errorf("%s %s: want %d, got %d %s", method, path, want, code, body)
	}
	return nil
}

func instPath(app, id string) string {
	return "apps/" + strings.ToUpper(app) + "/" + url.PathEscape(id)
}
