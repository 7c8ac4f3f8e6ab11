package config

import (
	"slices"
	"strings"
	"testing"
)

func TestUsersFromYAML(t *testing.T) {
	c := mustLoad(t, nil, []string{"PAY_PW=p-pw"}, map[string]string{"application.yml": `
spring.security.user: {name: eureka, password: s3cret}
goreka:
  security:
    users:
      - name: orders
        password: o-pw
        apps: [ORDERS, ORDERS-*]
      - name: pay
        password: ${PAY_PW}
        apps: PAYMENTS,BILLING
      - name: peer
        password: peer-pw
        roles: [peer]
`})
	want := []User{
		{Name: "orders", Password: "o-pw", Apps: []string{"ORDERS", "ORDERS-*"}},
		{Name: "pay", Password: "p-pw", Apps: []string{"PAYMENTS", "BILLING"}},
		{Name: "peer", Password: "peer-pw", Roles: []string{"peer"}},
	}
	if !slices.EqualFunc(c.Security.Users, want, func(a, b User) bool {
		return a.Name == b.Name && a.Password == b.Password && slices.Equal(a.Roles, b.Roles) && slices.Equal(a.Apps, b.Apps)
	}) {
		t.Fatalf("users = %+v, want %+v", c.Security.Users, want)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %q", c.Warnings)
	}
	out := c.Render()
	if strings.Contains(out, "o-pw") || strings.Contains(out, "p-pw") {
		t.Errorf("print-config shows a user's password:\n%s", out)
	}
	if !strings.Contains(out, "goreka.security.users=orders(roles= apps=ORDERS|ORDERS-*),pay(") {
		t.Errorf("print-config does not list the users:\n%s", out)
	}
}

// TestUsersHighestSourceWins: as Spring binds lists, the command line's
// list replaces the file's whole.
func TestUsersHighestSourceWins(t *testing.T) {
	c := mustLoad(t, []string{"--goreka.security.users[0].name=cli", "--goreka.security.users[0].password=x", "--goreka.security.users[0].apps=A"},
		[]string{"GOREKA_SECURITY_USERS_1_NAME=env", "GOREKA_SECURITY_USERS_1_PASSWORD=y"},
		map[string]string{"application.properties": "goreka.security.users[0].name=file\ngoreka.security.users[0].password=z\n"})
	if len(c.Security.Users) != 1 || c.Security.Users[0].Name != "cli" {
		t.Fatalf("users = %+v, want the command line's only", c.Security.Users)
	}
	c = mustLoad(t, nil, []string{"GOREKA_SECURITY_USERS_0_NAME=env", "GOREKA_SECURITY_USERS_0_PASSWORD=y", "GOREKA_SECURITY_USERS_0_ROLES=peer"}, nil)
	if len(c.Security.Users) != 1 || c.Security.Users[0].Name != "env" || !slices.Equal(c.Security.Users[0].Roles, []string{"peer"}) {
		t.Fatalf("users from the environment = %+v", c.Security.Users)
	}
}

func TestUsersErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no password", []string{"--goreka.security.users[0].name=a"}, `goreka.security.users[0] (command line): user "a" needs a password`},
		{"no name", []string{"--goreka.security.users[0].password=a"}, "a user needs a name"},
		{"unknown role", []string{"--goreka.security.users[0].name=a", "--goreka.security.users[0].password=b", "--goreka.security.users[0].roles=root"}, `unknown role; known roles: peer, admin`},
		{"unknown field", []string{"--goreka.security.users[0].name=a", "--goreka.security.users[0].password=b", "--goreka.security.users[0].app=X"}, `unknown field "app" of a user`},
		{"gap", []string{"--goreka.security.users[1].name=a", "--goreka.security.users[1].password=b"}, "goreka.security.users[0] (command line): missing (entries are numbered from 0 without gaps)"},
		{"duplicate", []string{"--goreka.security.users[0].name=a", "--goreka.security.users[0].password=b", "--goreka.security.users[1].name=a", "--goreka.security.users[1].password=c"}, `user "a" is configured twice`},
		{"same as the full user", []string{"--spring.security.user.password=p", "--goreka.security.users[0].name=user", "--goreka.security.users[0].password=c"}, `user "user" is configured twice`},
		{"colon", []string{"--goreka.security.users[0].name=a:b", "--goreka.security.users[0].password=c"}, "contains ':'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(tc.args, nil, t.TempDir(), fakeHost)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
