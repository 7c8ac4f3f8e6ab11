package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goreka/goreka/namespace"
)

// UsersProperty is the list of per-application users. Each element has
// name, password, roles and apps:
//
//	goreka:
//	  security:
//	    users:
//	      - name: orders
//	        password: ${ORDERS_PASSWORD}
//	        apps: [ORDERS, ORDERS-*]
//	      - name: peer
//	        password: ${PEER_PASSWORD}
//	        roles: [peer]
//
// or goreka.security.users[0].name=orders on the command line and in
// .properties files.
const UsersProperty = "goreka.security.users"

// maxUsers bounds the index of a goreka.security.users element.
const maxUsers = 10000

// User is one element of goreka.security.users.
type User struct {
	Name     string
	Password string
	Roles    []string // peer, admin
	Apps     []string // names or globs it may register, renew, cancel, override
	// Namespaces are the only namespaces the user may use (reads too);
	// empty: all of them, as before namespaces existed.
	Namespaces []string
	// CertificateSubject names the user by a verified client certificate
	// (server.ssl.client-auth want or need): its subject CN or one of its
	// DNS or URI SANs. Such a user needs no password.
	CertificateSubject string
}

var userRoles = []string{"peer", "admin"}

// bindUsers reads goreka.security.users with the same record reader as
// goreka.static-instances (listItems): as Spring binds lists, the highest
// source that has the list supplies all of it, numbered from 0.
func bindUsers(st *stack, c *Config, errs *[]error) {
	items, found, err := st.listItems(UsersProperty, canonicalKey(UsersProperty))
	if err != nil {
		*errs = append(*errs, err)
		return
	}
	if !found {
		return
	}
	if len(items) > maxUsers {
		*errs = append(*errs, fmt.Errorf("%s: %d users; at most %d", UsersProperty, len(items), maxUsers))
		return
	}
	byIndex := map[int]*User{}
	source := ""
	for _, it := range items {
		u := &User{}
		byIndex[it.index] = u
		for _, fk := range sortedKeys(it.fields) {
			e, _, err := st.resolved(it.fields[fk])
			if err != nil {
				*errs = append(*errs, err)
				continue
			}
			source = e.source
			field := fk
			if i := strings.IndexByte(field, '['); i > 0 {
				field = field[:i] // roles[0], apps[1]: a YAML sequence
			}
			v := e.value
			switch field {
			case "name":
				u.Name = strings.TrimSpace(v)
			case "password":
				u.Password = v
			case "certificatesubject":
				u.CertificateSubject = strings.TrimSpace(v)
			case "roles":
				for _, r := range splitList(v) {
					r = strings.ToLower(r)
					if !slices.Contains(userRoles, r) {
						*errs = append(*errs, fmt.Errorf("%s=%q (%s): unknown role; known roles: %s", e.key, v, e.source, strings.Join(userRoles, ", ")))
						continue
					}
					u.Roles = append(u.Roles, r)
				}
			case "apps":
				u.Apps = append(u.Apps, splitList(v)...)
			case "namespaces":
				for _, ns := range splitList(v) {
					if err := namespace.Validate(ns); err != nil {
						*errs = append(*errs, fmt.Errorf("%s=%q (%s): %w", e.key, v, e.source, err))
						continue
					}
					u.Namespaces = append(u.Namespaces, ns)
				}
			default:
				*errs = append(*errs, fmt.Errorf("%s (%s): unknown field %q of a user; a user has name, password, certificate-subject, roles, apps and namespaces", e.key, e.source, field))
			}
		}
	}
	idxs := make([]int, 0, len(byIndex))
	for i := range byIndex {
		idxs = append(idxs, i)
	}
	slices.Sort(idxs)
	seen, subjects := map[string]bool{}, map[string]string{}
	if c.Security.User != "" {
		seen[c.Security.User] = true
	}
	if c.Security.ReadOnlyUser != "" {
		seen[c.Security.ReadOnlyUser] = true
	}
	for _, i := range idxs {
		u := byIndex[i]
		at := fmt.Sprintf("%s[%d] (%s)", UsersProperty, i, source)
		switch {
		case u.Name == "":
			*errs = append(*errs, fmt.Errorf("%s: a user needs a name", at))
			continue
		case u.Password == "" && u.CertificateSubject == "":
			*errs = append(*errs, fmt.Errorf("%s: user %q needs a password or a certificate-subject", at, u.Name))
			continue
		case strings.Contains(u.Name, ":"):
			*errs = append(*errs, fmt.Errorf("%s: user name %q contains ':', which basic auth cannot carry", at, u.Name))
			continue
		case seen[u.Name]:
			*errs = append(*errs, fmt.Errorf("%s: user %q is configured twice (names are unique across spring.security.user, the read-only user and %s)", at, u.Name, UsersProperty))
			continue
		}
		seen[u.Name] = true
		if u.CertificateSubject != "" {
			if prev, dup := subjects[u.CertificateSubject]; dup {
				*errs = append(*errs, fmt.Errorf("%s: certificate-subject %q is user %q's too", at, u.CertificateSubject, prev))
				continue
			}
			subjects[u.CertificateSubject] = u.Name
		}
		c.Security.Users = append(c.Security.Users, *u)
	}
	c.set[canonicalKey(UsersProperty)] = source
	c.origin[UsersProperty] = origin{value: usersSummary(c.Security.Users), source: source}
}

// usersSummary is what --goreka.print-config shows: names, roles and apps,
// never passwords.
func usersSummary(us []User) string {
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = fmt.Sprintf("%s(roles=%s apps=%s)", u.Name, strings.Join(u.Roles, "|"), strings.Join(u.Apps, "|"))
		if u.CertificateSubject != "" {
			parts[i] = strings.TrimSuffix(parts[i], ")") + " certificate-subject=" + u.CertificateSubject + ")"
		}
		if len(u.Namespaces) > 0 {
			parts[i] = strings.TrimSuffix(parts[i], ")") + " namespaces=" + strings.Join(u.Namespaces, "|") + ")"
		}
	}
	return strings.Join(parts, ",")
}
