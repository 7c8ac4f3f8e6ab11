package compat

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goreka/goreka/registry"
)

// DecodeError reports a body that cannot be decoded. Its message is meant
// for a 400 response.
type DecodeError struct {
	Format Format
	Msg    string
	Err    error // the underlying parser error, if any
}

func (e *DecodeError) Error() string {
	s := "cannot parse " + e.Format.String() + " body: " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *DecodeError) Unwrap() error { return e.Err }

func decodeErr(f Format, msg string, err error) *DecodeError {
	return &DecodeError{Format: f, Msg: msg, Err: err}
}

// wireValue is one scalar as it came over the wire: its text (numbers and
// booleans as their literal) and whether it was present and not null.
type wireValue struct {
	s  string
	ok bool
}

// wireInstance is an instance object before interpretation, shared by the
// JSON and XML decoders.
type wireInstance struct {
	InstanceID             wireValue       `json:"instanceId"`
	HostName               wireValue       `json:"hostName"`
	App                    wireValue       `json:"app"`
	AppGroupName           wireValue       `json:"appGroupName"`
	IPAddr                 wireValue       `json:"ipAddr"`
	SID                    wireValue       `json:"sid"`
	Status                 wireValue       `json:"status"`
	OverriddenStatus       wireValue       `json:"overriddenStatus"`
	OverriddenStatusLegacy wireValue       `json:"overriddenstatus"`
	Port                   *wirePort       `json:"port"`
	SecurePort             *wirePort       `json:"securePort"`
	CountryID              wireValue       `json:"countryId"`
	DataCenterInfo         *wireDataCenter `json:"dataCenterInfo"`
	LeaseInfo              *wireLease      `json:"leaseInfo"`
	Metadata               wireMetadata    `json:"metadata"`
	HomePageURL            wireValue       `json:"homePageUrl"`
	StatusPageURL          wireValue       `json:"statusPageUrl"`
	HealthCheckURL         wireValue       `json:"healthCheckUrl"`
	SecureHealthCheckURL   wireValue       `json:"secureHealthCheckUrl"`
	VIPAddress             wireValue       `json:"vipAddress"`
	SecureVIPAddress       wireValue       `json:"secureVipAddress"`
	IsCoordinating         wireValue       `json:"isCoordinatingDiscoveryServer"`
	LastUpdatedTimestamp   wireValue       `json:"lastUpdatedTimestamp"`
	LastDirtyTimestamp     wireValue       `json:"lastDirtyTimestamp"`
	ActionType             wireValue       `json:"actionType"`
	ASGName                wireValue       `json:"asgName"`
}

type wirePort struct {
	Number  wireValue `json:"$"`
	Enabled wireValue `json:"@enabled"`
}

type wireDataCenter struct {
	Class    wireValue    `json:"@class"`
	Name     wireValue    `json:"name"`
	Metadata wireMetadata `json:"metadata"`
}

type wireLease struct {
	RenewalInterval wireValue `json:"renewalIntervalInSecs"`
	Duration        wireValue `json:"durationInSecs"`
	Registration    wireValue `json:"registrationTimestamp"`
	LastRenewal     wireValue `json:"lastRenewalTimestamp"`
	RenewalLegacy   wireValue `json:"renewalTimestamp"`
	Eviction        wireValue `json:"evictionTimestamp"`
	ServiceUp       wireValue `json:"serviceUpTimestamp"`
}

// wireMetadata holds metadata entries; "@class" and null values are dropped.
type wireMetadata map[string]string

// Port defaults of InstanceInfo.Builder when the object is absent.
const (
	defaultPort       = 7001
	defaultSecurePort = 7002
	defaultCountryID  = 1
)

// maxSecs is the largest lease timing accepted: Java keeps durationInSecs
// and renewalIntervalInSecs in an int, and Jackson refuses larger numbers.
const maxSecs = math.MaxInt32

// dataCenterName checks a data-center name. Java only knows Netflix, Amazon
// and MyOwn (DataCenterInfo.Name) and answers 400 to anything else; storing
// another name would break every Spring Cloud client's fetch, which fails on
// an unknown enum value. A name that differs only in case is corrected.
func dataCenterName(name string) (string, error) {
	for _, known := range []string{registry.DataCenterMyOwn, registry.DataCenterAmazon, registry.DataCenterNetflix} {
		if strings.EqualFold(name, known) {
			return known, nil
		}
	}
	if name == "" {
		return "", nil
	}
	return "", &fieldError{name: "dataCenterInfo.name", value: name, err: errors.New("not one of MyOwn, Amazon, Netflix")}
}

// toLeaseView interprets w. In XML, statuses are upper-cased before lookup
// (InstanceStatus.toEnum); in JSON they are case-sensitive (EnumLookup).
// Unknown statuses become UNKNOWN. The result is normalized.
func (w *wireInstance) toLeaseView(f Format) (*registry.LeaseView, error) {
	v := new(registry.LeaseView)
	if err := w.fill(f, v); err != nil {
		return nil, err
	}
	return v, nil
}

// fill is toLeaseView into *v, which it does not keep: a caller that wants
// the instance only (DecodeInstance) keeps v on its stack.
func (w *wireInstance) fill(f Format, v *registry.LeaseView) error {
	in := &registry.Instance{
		InstanceID:           w.InstanceID.s,
		HostName:             w.HostName.s,
		App:                  w.App.s,
		AppGroupName:         w.AppGroupName.s,
		IPAddr:               w.IPAddr.s,
		SID:                  w.SID.s,
		HomePageURL:          w.HomePageURL.s,
		StatusPageURL:        w.StatusPageURL.s,
		HealthCheckURL:       w.HealthCheckURL.s,
		SecureHealthCheckURL: w.SecureHealthCheckURL.s,
		VIPAddress:           w.VIPAddress.s,
		SecureVIPAddress:     w.SecureVIPAddress.s,
		ASGName:              w.ASGName.s,
		CountryID:            defaultCountryID,
		Port:                 registry.Port{Number: defaultPort, Enabled: true},
		SecurePort:           registry.Port{Number: defaultSecurePort},
	}
	if in.SID == "na" || in.SID == "unknown" {
		in.SID = ""
	}
	in.Status = parseStatus(w.Status, f)
	if w.OverriddenStatus.ok {
		in.OverriddenStatus = parseStatus(w.OverriddenStatus, f)
	} else {
		in.OverriddenStatus = parseStatus(w.OverriddenStatusLegacy, f)
	}
	var err error
	if w.Port != nil {
		if in.Port, err = w.Port.toPort(defaultPort, true, "port"); err != nil {
			return err
		}
	}
	if w.SecurePort != nil {
		if in.SecurePort, err = w.SecurePort.toPort(defaultSecurePort, false, "securePort"); err != nil {
			return err
		}
	}
	if w.CountryID.ok {
		n, err := parseInt(w.CountryID, "countryId")
		if err != nil {
			return err
		}
		in.CountryID = int(n)
	}
	if dc := w.DataCenterInfo; dc != nil {
		if in.DataCenterInfo.Name, err = dataCenterName(dc.Name.s); err != nil {
			return err
		}
		if in.DataCenterInfo.Name == "" && dc.Class.s == classAmazonInfo {
			in.DataCenterInfo.Name = registry.DataCenterAmazon
		}
		if in.DataCenterInfo.Name == registry.DataCenterAmazon && len(dc.Metadata) > 0 {
			in.DataCenterInfo.Metadata = map[string]string(dc.Metadata)
		}
	}
	if len(w.Metadata) > 0 {
		in.Metadata = map[string]string(w.Metadata)
	}
	in.IsCoordinatingDiscoveryServer = strings.EqualFold(w.IsCoordinating.s, "true")
	if in.LastUpdatedTimestamp, err = parseMillis(w.LastUpdatedTimestamp, "lastUpdatedTimestamp"); err != nil {
		return err
	}
	if in.LastDirtyTimestamp, err = parseMillis(w.LastDirtyTimestamp, "lastDirtyTimestamp"); err != nil {
		return err
	}
	switch a := registry.ActionType(w.ActionType.s); a {
	case registry.ActionAdded, registry.ActionModified, registry.ActionDeleted:
		in.ActionType = a
	}
	*v = registry.LeaseView{Instance: in}
	if l := w.LeaseInfo; l != nil {
		if v.RenewalInterval, err = parseSecs(l.RenewalInterval, "leaseInfo.renewalIntervalInSecs"); err != nil {
			return err
		}
		if v.Duration, err = parseSecs(l.Duration, "leaseInfo.durationInSecs"); err != nil {
			return err
		}
		last := l.LastRenewal
		if !last.ok {
			last = l.RenewalLegacy
		}
		for _, ts := range []struct {
			dst  *time.Time
			v    wireValue
			name string
		}{
			{&v.RegistrationTimestamp, l.Registration, "leaseInfo.registrationTimestamp"},
			{&v.LastRenewalTimestamp, last, "leaseInfo.lastRenewalTimestamp"},
			{&v.EvictionTimestamp, l.Eviction, "leaseInfo.evictionTimestamp"},
			{&v.ServiceUpTimestamp, l.ServiceUp, "leaseInfo.serviceUpTimestamp"},
		} {
			if *ts.dst, err = parseMillis(ts.v, ts.name); err != nil {
				return err
			}
		}
		in.LeaseInfo = registry.LeaseInfo{RenewalInterval: v.RenewalInterval, Duration: v.Duration}
	}
	applySpringInstanceID(in)
	in.Normalize()
	return nil
}

// applySpringInstanceID is Spring Cloud's CloudJacksonJson rule: without an
// instanceId, metadata "instanceId" becomes the id, prefixed with
// "hostName:" unless it already starts with the host name.
func applySpringInstanceID(in *registry.Instance) {
	if in.InstanceID != "" {
		return
	}
	id := in.Metadata["instanceId"]
	if strings.TrimSpace(id) == "" {
		return
	}
	if strings.TrimSpace(in.HostName) != "" && !strings.HasPrefix(id, in.HostName) {
		id = in.HostName + ":" + id
	}
	in.InstanceID = id
}

func (p *wirePort) toPort(defNumber int, defEnabled bool, name string) (registry.Port, error) {
	out := registry.Port{Number: defNumber, Enabled: defEnabled}
	if p.Number.ok {
		n, err := parseInt(p.Number, name)
		if err != nil {
			// The field's name only now: name+".$" up front cost every
			// registration an allocation per port.
			if fe, ok := err.(*fieldError); ok {
				fe.name += ".$"
			}
			return out, err
		}
		out.Number = int(n)
	}
	if p.Enabled.ok {
		// Port is on unless "false", securePort only if "true" (the
		// Builder's defaults survive anything unrecognised).
		if defEnabled {
			out.Enabled = !strings.EqualFold(p.Enabled.s, "false")
		} else {
			out.Enabled = strings.EqualFold(p.Enabled.s, "true")
		}
	}
	return out, nil
}

func parseStatus(v wireValue, f Format) registry.Status {
	if !v.ok {
		return "" // Normalize fills the default
	}
	s := v.s
	if f == XML {
		s = strings.ToUpper(s)
	}
	if st, ok := registry.ParseStatus(s); ok {
		return st
	}
	return registry.StatusUnknown
}

var errNotInteger = errors.New("not an integer")

// parseInt reads an integer given as a number or numeric string. A
// fractional number is truncated, as Jackson's getValueAsLong does.
func parseInt(v wireValue, name string) (int64, error) {
	s := strings.TrimSpace(v.s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	fl, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(fl) || fl >= math.MaxInt64 || fl <= math.MinInt64 {
		return 0, &fieldError{name: name, value: v.s, err: errNotInteger}
	}
	return int64(fl), nil
}

func parseMillis(v wireValue, name string) (time.Time, error) {
	if !v.ok {
		return time.Time{}, nil
	}
	n, err := parseInt(v, name)
	if err != nil {
		return time.Time{}, err
	}
	return fromMillis(n), nil
}

// parseSecs reads a lease duration in seconds; absent or <= 0 is 0.
func parseSecs(v wireValue, name string) (time.Duration, error) {
	if !v.ok {
		return 0, nil
	}
	n, err := parseInt(v, name)
	if err != nil || n <= 0 {
		return 0, err
	}
	if n > maxSecs {
		return 0, &fieldError{name: name, value: strconv.FormatInt(n, 10), err: errors.New("out of range")}
	}
	return time.Duration(n) * time.Second, nil
}

// fieldError names the field that holds a bad value.
type fieldError struct {
	name, value string
	err         error
}

func (e *fieldError) Error() string {
	v := e.value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return e.name + ": " + strconv.Quote(v) + " is " + e.err.Error()
}

func (e *fieldError) Unwrap() error { return e.err }

// SniffFormat is the format of a body that came without a Content-Type, as
// Jersey's provider decides it: XML when its first non-blank byte is '<',
// else JSON.
func SniffFormat(body []byte) Format {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '<' {
		return XML
	}
	return JSON
}
