package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/gin-gonic/gin"
)

// Roles of a configured user (goreka.security.users[*].roles).
const (
	// RolePeer may post replication batches (each item is still authorized
	// against the user's apps, all of them when none are listed) and write
	// the apps it lists like any user. Peer servers authenticate with it.
	RolePeer = "peer"
	// RoleAdmin may write everything, as the spring.security.user does:
	// every app, ASG status and replication batches.
	RoleAdmin = "admin"
)

// UserConfig is one entry of goreka.security.users: a basic-auth user that
// may read everything and write (register, renew, cancel, override status,
// update metadata) only the apps its Apps patterns match.
type UserConfig struct {
	Name     string
	Password string
	Roles    []string // RolePeer, RoleAdmin
	// Apps are application names or globs (* any run of characters, ? one
	// character), matched case-insensitively (ASCII) against the app of
	// the request path. Empty means none, except for a peer: all.
	Apps []string
	// Namespaces, when not empty, are the only namespaces the user may use
	// at all, reads included ("default" is /eureka/); empty: every one.
	Namespaces []string
	// CertificateSubject, when set, names the user by a verified client
	// certificate (the listener's client-auth want or need): its subject CN,
	// or one of its DNS or URI SANs, equal to it. Password may then be
	// empty: the user has no basic-auth credentials.
	CertificateSubject string
}

// principal is who a request's credentials name and what it may write.
type principal struct {
	name     string
	readOnly bool // reads only (goreka.security.read-only-user)
	admin    bool // every write, as spring.security.user
	peer     bool // may post replication batches
	allApps  bool
	apps     []string // upper-cased patterns
	// namespaces, when not nil, are the namespaces the user may use.
	namespaces []string
	cred       credential // zero when the user has no password
	subject    string     // UserConfig.CertificateSubject
}

// newPrincipal checks a configured user and builds its principal.
func newPrincipal(u UserConfig) (*principal, error) {
	if u.Name == "" {
		return nil, fmt.Errorf("a user has no name")
	}
	if u.Password == "" && u.CertificateSubject == "" {
		return nil, fmt.Errorf("user %q has no password and no certificate subject", u.Name)
	}
	p := &principal{name: u.Name, subject: u.CertificateSubject}
	if u.Password != "" {
		p.cred = newCredential(u.Name, u.Password)
	}
	for _, ns := range u.Namespaces {
		if ns = strings.TrimSpace(ns); ns != "" {
			p.namespaces = append(p.namespaces, ns)
		}
	}
	for _, r := range u.Roles {
		switch strings.ToLower(strings.TrimSpace(r)) {
		case RolePeer:
			p.peer = true
		case RoleAdmin:
			p.admin = true
		case "":
		default:
			return nil, fmt.Errorf("user %q: unknown role %q (known: %s, %s)", u.Name, r, RolePeer, RoleAdmin)
		}
	}
	for _, a := range u.Apps {
		a = strings.ToUpper(strings.TrimSpace(a))
		if a == "" {
			continue
		}
		if strings.Trim(a, "*") == "" {
			p.allApps = true
			continue
		}
		p.apps = append(p.apps, a)
	}
	if p.peer && len(u.Apps) == 0 {
		p.allApps = true
	}
	if p.admin {
		p.allApps = true
	}
	return p, nil
}

// mayWrite reports whether p may write instances of app. It allocates
// nothing: the patterns are upper-cased once and matched with ASCII case
// folding.
func (p *principal) mayWrite(app string) bool {
	if p.allApps {
		return true
	}
	for _, pat := range p.apps {
		if globFold(pat, app) {
			return true
		}
	}
	return false
}

// globFold matches name against an upper-case pattern where * is any run
// of characters and ? one byte, folding ASCII letters of name to upper case.
// It backtracks only to the last star, so it is linear in practice.
func globFold(pat, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		if p < len(pat) {
			switch c := pat[p]; {
			case c == '*':
				star, mark = p, n
				p++
				continue
			case c == '?' || c == upper(name[n]):
				p++
				n++
				continue
			}
		}
		if star < 0 {
			return false
		}
		p = star + 1
		mark++
		n = mark
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

func upper(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - 'a' + 'A'
	}
	return b
}

// users is the set of credentials the auth middleware accepts.
type users struct {
	// byHeader finds a principal by its exact Authorization header with one
	// map lookup that allocates nothing; the hit is then confirmed in
	// constant time.
	byHeader map[string]*principal
	// byName serves the other encodings of the same credentials (another
	// scheme spelling, padding): sha256 of the user name.
	byName map[[32]byte]*principal
	// bySubject finds a principal by a verified client certificate's name.
	bySubject map[string]*principal
	names     map[string]bool
}

func (us *users) add(p *principal) error {
	if us.byHeader == nil {
		us.byHeader, us.byName, us.bySubject, us.names = map[string]*principal{}, map[[32]byte]*principal{}, map[string]*principal{}, map[string]bool{}
	}
	if us.names[p.name] {
		return fmt.Errorf("user %q is configured twice", p.name)
	}
	us.names[p.name] = true
	if p.subject != "" {
		if q := us.bySubject[p.subject]; q != nil {
			return fmt.Errorf("users %q and %q have the same certificate subject %q", q.name, p.name, p.subject)
		}
		us.bySubject[p.subject] = p
	}
	if p.cred.header != "" {
		us.byHeader[p.cred.header] = p
		us.byName[p.cred.user] = p
	}
	return nil
}

// byCertificate returns the principal a verified client certificate
// names, or nil: its subject CN first, then its DNS and URI SANs. The
// handshake verified the chain (client-auth want or need); an unverified
// certificate names nobody.
func (us *users) byCertificate(st *tls.ConnectionState) *principal {
	if st == nil || len(st.VerifiedChains) == 0 || len(us.bySubject) == 0 {
		return nil
	}
	c := st.VerifiedChains[0][0]
	if p := us.bySubject[c.Subject.CommonName]; p != nil && c.Subject.CommonName != "" {
		return p
	}
	for _, n := range c.DNSNames {
		if p := us.bySubject[n]; p != nil {
			return p
		}
	}
	for _, u := range c.URIs {
		if p := us.bySubject[u.String()]; p != nil {
			return p
		}
	}
	return nil
}

// find returns the principal an Authorization header names, or nil.
func (us *users) find(h string) *principal {
	if h == "" {
		return nil
	}
	if p := us.byHeader[h]; p != nil && subtle.ConstantTimeCompare([]byte(h), []byte(p.cred.header)) == 1 {
		return p
	}
	user, pass, ok := decodeBasic(h)
	if !ok {
		return nil
	}
	u, pw := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
	p := us.byName[u]
	if p == nil || subtle.ConstantTimeCompare(pw[:], p.cred.pass[:]) != 1 {
		return nil
	}
	return p
}

// principalKey holds a restricted principal in the gin context of a
// replication batch, for the per-item checks.
const principalKey = "goreka.principal"

// mayDo decides a write of a non-admin principal after routing, from the
// route table's write action and the route's app parameter. It returns ""
// when allowed, else what is refused.
func (p *principal) mayDo(c *gin.Context, rt *boundRoute) string {
	switch rt.write {
	case writeNoRoute:
		return "" // gin answers 404 or 405 and nothing changes
	case writeBatch:
		if !p.peer {
			return fmt.Sprintf("user %q may not post replication batches (needs role %s)", p.name, RolePeer)
		}
		if !p.allApps {
			c.Set(principalKey, p)
		}
		return ""
	case writeRenewals:
		if !p.allApps {
			c.Set(principalKey, p)
		}
		return ""
	case writeOther:
		return fmt.Sprintf("user %q may not %s %s (needs role %s)", p.name, c.Request.Method, rt.label, RoleAdmin)
	}
	app := c.Param("app")
	if p.mayWrite(app) {
		return ""
	}
	return fmt.Sprintf("user %q may not %s instances of application %s", p.name, rt.write.verb(), app)
}

// batchPrincipal returns the restricted principal of a replication batch,
// nil when every item is allowed.
func batchPrincipal(c *gin.Context) *principal {
	if v, ok := c.Get(principalKey); ok {
		return v.(*principal)
	}
	return nil
}
