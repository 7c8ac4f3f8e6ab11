package eurekahttp

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
)

// Endpoint is one Eureka server as a service URL names it: the base URL
// requests are built on and the credentials the URL carried.
type Endpoint struct {
	// URL is the base URL without user-info, ending in "/"
	// (http://host:8761/eureka/). It is safe to log.
	URL string
	// Authorization is the header value sent with every call ("Basic
	// ..."), or "" for none.
	Authorization string
}

// String is the URL: printing an Endpoint never shows its credentials.
func (e Endpoint) String() string { return e.URL }

// ParseURL parses a service URL (http://user:pass@host:port/eureka/): an
// absolute http or https URL with a host. Its user-info becomes the
// Authorization (BasicAuth); the path gets a trailing "/"; a query or
// fragment is dropped. The error names what is wrong, not the URL: the
// caller knows which setting it came from.
func ParseURL(raw string) (Endpoint, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return Endpoint{}, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Endpoint{}, errors.New("scheme must be http or https")
	}
	if u.Hostname() == "" {
		return Endpoint{}, errors.New("no host")
	}
	var ep Endpoint
	if u.User != nil {
		ep.Authorization = BasicAuth(u.User)
		u.User = nil
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	u.RawQuery, u.Fragment = "", ""
	ep.URL = u.String()
	return ep, nil
}

// BasicAuth is the preemptive basic-auth header of a URL's user-info, as
// Spring's transports send it; unlike Spring, a password holding ':'
// works. A user without a password carries no credentials ("": Spring
// needs both parts).
func BasicAuth(u *url.Userinfo) string {
	if u == nil {
		return ""
	}
	pass, ok := u.Password()
	if !ok {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pass))
}
