package compat

import "github.com/goreka/goreka/registry"

// DecodeInstance reads a register body: {"instance":{...}} or <instance>.
// It is lenient like the Java server (see the package doc): unknown fields
// are ignored, scalars may be strings, numbers or booleans, nulls mean
// absent, and the result is normalized (upper-case app, default statuses).
// leaseInfo durations land in Instance.LeaseInfo (0 when absent or <= 0);
// its timestamps are dropped, the server owns the lease. Malformed input
// yields a *DecodeError.
func DecodeInstance(body []byte, f Format) (*registry.Instance, error) {
	if f == JSON {
		var w wireInstance
		if fastInstance(body, &w) {
			var v registry.LeaseView
			if err := w.fill(JSON, &v); err != nil {
				return nil, decodeErr(JSON, "bad instance", err)
			}
			return v.Instance, nil
		}
		raw, err := rootJSON(body, "instance")
		if err != nil {
			return nil, err
		}
		v, err := decodeInstanceJSON(raw)
		if err != nil {
			return nil, err
		}
		return v.Instance, nil
	}
	root, err := rootXML(body, "instance")
	if err != nil {
		return nil, err
	}
	v, err := xmlInstance(root).toLeaseView(XML)
	if err != nil {
		return nil, decodeErr(XML, "bad instance", err)
	}
	return v.Instance, nil
}

// DecodeApplications reads a full registry document (a peer's or an old
// server's GET /apps): {"applications":{...}} or <applications>. Single
// objects are accepted where arrays belong. Each LeaseView carries the lease
// times of its leaseInfo; VersionDelta and HashCode are the document's.
// Applications are sorted by name and instances by id, as the registry
// keeps them. Malformed input yields a *DecodeError.
func DecodeApplications(body []byte, f Format) (*registry.Applications, error) {
	if f == JSON {
		return decodeApplicationsJSON(body)
	}
	return decodeApplicationsXML(body)
}
