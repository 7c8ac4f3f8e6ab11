package config

import (
	"slices"
	"strings"
	"testing"
)

func TestNamespacesProperties(t *testing.T) {
	c := mustLoad(t, nil, nil, nil)
	if nc := c.Goreka.Namespaces; len(nc.Allowed) != 0 || nc.AutoCreate || nc.Max != 100 || nc.MaxInstances != 10000 {
		t.Fatalf("defaults: %+v", nc)
	}
	// Spring's relaxed forms: YAML, environment, command line.
	c = mustLoad(t, []string{"--goreka.namespaces.max-instances=5"}, []string{"GOREKA_NAMESPACES_AUTOCREATE=true"},
		map[string]string{"application.yml": "goreka:\n  namespaces:\n    allowed: [dev, test]\n    max: 3\n    stockPeers: http://j:8761/eureka/\n"})
	nc := c.Goreka.Namespaces
	if !slices.Equal(nc.Allowed, []string{"dev", "test"}) || !nc.AutoCreate || nc.Max != 3 || nc.MaxInstances != 5 ||
		!slices.Equal(nc.StockPeers, []string{"http://j:8761/eureka/"}) {
		t.Fatalf("namespaces: %+v", nc)
	}
	for arg, want := range map[string]string{
		"--goreka.namespaces.allowed=dev,Test": `"Test" may only hold lower-case letters`,
		"--goreka.namespaces.allowed=-dev":     `starts or ends with '-'`,
		"--goreka.namespaces.allowed=default":  `"default" is the default namespace`,
	} {
		_, err := load([]string{arg}, nil, setup(t, nil), fakeHost)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "goreka.namespaces.allowed") {
			t.Errorf("%s: err %v, want one naming the property and %q", arg, err, want)
		}
	}
}

func TestUsersNamespaces(t *testing.T) {
	c := mustLoad(t, []string{"--goreka.security.users[0].name=dev", "--goreka.security.users[0].password=x",
		"--goreka.security.users[0].namespaces=dev,default", "--goreka.security.users[1].name=all", "--goreka.security.users[1].password=y"}, nil, nil)
	if u := c.Security.Users; len(u) != 2 || !slices.Equal(u[0].Namespaces, []string{"dev", "default"}) || u[1].Namespaces != nil {
		t.Fatalf("users: %+v", u)
	}
	_, err := load([]string{"--goreka.security.users[0].name=dev", "--goreka.security.users[0].password=x",
		"--goreka.security.users[0].namespaces=Dev"}, nil, setup(t, nil), fakeHost)
	if err == nil || !strings.Contains(err.Error(), `"Dev"`) {
		t.Fatalf("bad namespace of a user: %v", err)
	}
}
