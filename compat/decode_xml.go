package compat

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"

	"github.com/goreka/goreka/registry"
)

// maxXMLDepth bounds element nesting; Eureka documents are at most 6 deep.
const maxXMLDepth = 64

var (
	errXMLDirective = errors.New("DOCTYPE and other directives are not allowed")
	errXMLDepth     = errors.New("elements nested too deeply")
	errXMLTrailing  = errors.New("content after the root element")
	errXMLNoRoot    = errors.New("no root element")
)

// xnode is an element of a parsed XML document: its (prefixed) name, its
// attributes, the character data directly inside it and its children.
type xnode struct {
	name  string
	attrs []xml.Attr
	text  []byte
	kids  []*xnode
}

func (n *xnode) attr(name string) wireValue {
	for _, a := range n.attrs {
		if a.Name.Space == "" && a.Name.Local == name {
			return wireValue{s: a.Value, ok: true}
		}
	}
	return wireValue{}
}

func (n *xnode) value() wireValue { return wireValue{s: string(n.text), ok: true} }

func xname(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}

// parseXML reads a whole document into a tree. It uses encoding/xml in
// strict mode on raw tokens: only the five predefined entities and
// character references are understood (an entity defined in a DTD is an
// error, never expanded), directives such as DOCTYPE are refused, other
// encodings than UTF-8 are refused, and nesting is bounded.
func parseXML(body []byte) (*xnode, error) {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = true
	var root *xnode
	var stack []*xnode
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root != nil && len(stack) == 0 {
				return nil, errXMLTrailing
			}
			if len(stack) >= maxXMLDepth {
				return nil, errXMLDepth
			}
			n := &xnode{name: xname(t.Name), attrs: t.Attr}
			if len(stack) == 0 {
				root = n
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1].name != xname(t.Name) {
				return nil, errors.New("unexpected end element </" + xname(t.Name) + ">")
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.text = append(p.text, t...)
			} else if len(bytes.TrimSpace(t)) > 0 {
				return nil, errXMLTrailing
			}
		case xml.Directive:
			return nil, errXMLDirective
		}
	}
	if len(stack) > 0 {
		return nil, errors.New("unexpected end of document inside <" + stack[len(stack)-1].name + ">")
	}
	if root == nil {
		return nil, errXMLNoRoot
	}
	return root, nil
}

func rootXML(body []byte, root string) (*xnode, error) {
	n, err := parseXML(body)
	if err != nil {
		return nil, decodeErr(XML, "malformed XML", err)
	}
	if n.name != root {
		return nil, decodeErr(XML, "root element is <"+n.name+">, want <"+root+">", nil)
	}
	return n, nil
}

// xmlMetadata reads <metadata>: one child per key, names unescaped as
// XStream does; the class attribute (EmptyMap marker) is ignored.
func xmlMetadata(n *xnode) wireMetadata {
	var m wireMetadata
	for _, k := range n.kids {
		key := decodeXMLName(k.name)
		if key == "@class" {
			continue
		}
		if m == nil {
			m = make(wireMetadata, len(n.kids))
		}
		m[key] = string(k.text)
	}
	return m
}

func xmlInstance(n *xnode) *wireInstance {
	w := &wireInstance{}
	for _, k := range n.kids {
		switch k.name {
		case "instanceId":
			w.InstanceID = k.value()
		case "hostName":
			w.HostName = k.value()
		case "app":
			w.App = k.value()
		case "appGroupName":
			w.AppGroupName = k.value()
		case "ipAddr":
			w.IPAddr = k.value()
		case "sid":
			w.SID = k.value()
		case "status":
			w.Status = k.value()
		case "overriddenstatus":
			w.OverriddenStatusLegacy = k.value()
		case "overriddenStatus":
			w.OverriddenStatus = k.value()
		case "port":
			w.Port = &wirePort{Number: k.value(), Enabled: k.attr("enabled")}
		case "securePort":
			w.SecurePort = &wirePort{Number: k.value(), Enabled: k.attr("enabled")}
		case "countryId":
			w.CountryID = k.value()
		case "dataCenterInfo":
			dc := &wireDataCenter{Class: k.attr("class")}
			for _, c := range k.kids {
				switch c.name {
				case "name":
					dc.Name = c.value()
				case "metadata":
					dc.Metadata = xmlMetadata(c)
				}
			}
			w.DataCenterInfo = dc
		case "leaseInfo":
			l := &wireLease{}
			for _, c := range k.kids {
				switch c.name {
				case "renewalIntervalInSecs":
					l.RenewalInterval = c.value()
				case "durationInSecs":
					l.Duration = c.value()
				case "registrationTimestamp":
					l.Registration = c.value()
				case "lastRenewalTimestamp":
					l.LastRenewal = c.value()
				case "renewalTimestamp":
					l.RenewalLegacy = c.value()
				case "evictionTimestamp":
					l.Eviction = c.value()
				case "serviceUpTimestamp":
					l.ServiceUp = c.value()
				}
			}
			w.LeaseInfo = l
		case "metadata":
			w.Metadata = xmlMetadata(k)
		case "homePageUrl":
			w.HomePageURL = k.value()
		case "statusPageUrl":
			w.StatusPageURL = k.value()
		case "healthCheckUrl":
			w.HealthCheckURL = k.value()
		case "secureHealthCheckUrl":
			w.SecureHealthCheckURL = k.value()
		case "vipAddress":
			w.VIPAddress = k.value()
		case "secureVipAddress":
			w.SecureVIPAddress = k.value()
		case "isCoordinatingDiscoveryServer":
			w.IsCoordinating = k.value()
		case "lastUpdatedTimestamp":
			w.LastUpdatedTimestamp = k.value()
		case "lastDirtyTimestamp":
			w.LastDirtyTimestamp = k.value()
		case "actionType":
			w.ActionType = k.value()
		case "asgName":
			w.ASGName = k.value()
		}
	}
	return w
}

func decodeApplicationsXML(body []byte) (*registry.Applications, error) {
	root, err := rootXML(body, "applications")
	if err != nil {
		return nil, err
	}
	apps := &registry.Applications{Apps: []registry.Application{}}
	for _, k := range root.kids {
		switch k.name {
		case "versions__delta":
			if apps.VersionDelta, err = parseInt(k.value(), "versions__delta"); err != nil {
				return nil, decodeErr(XML, "bad applications", err)
			}
		case "apps__hashcode":
			apps.HashCode = string(k.text)
		case "application":
			app := registry.Application{Instances: []registry.LeaseView{}}
			for _, c := range k.kids {
				switch c.name {
				case "name":
					app.Name = string(c.text)
				case "instance":
					v, err := xmlInstance(c).toLeaseView(XML)
					if err != nil {
						return nil, decodeErr(XML, "bad instance in application "+strconv.Quote(app.Name), err)
					}
					app.Instances = append(app.Instances, *v)
				}
			}
			apps.Apps = append(apps.Apps, app)
		}
	}
	sortApplications(apps)
	return apps, nil
}
