package registry

import (
	"strings"
	"time"
)

// ParseStatus returns the Status named exactly s (case-sensitive, as
// InstanceStatus.valueOf) and whether it is one of Eureka's statuses.
func ParseStatus(s string) (Status, bool) {
	switch Status(s) {
	case StatusUp, StatusDown, StatusStarting, StatusOutOfService, StatusUnknown:
		return Status(s), true
	}
	return "", false
}

// ParseStatusParam reads the status a request names in its parameter name
// (a query parameter of the REST API or a field of a replication item).
// Empty is "none": allowed unless required. Anything else must be one of
// Eureka's statuses, spelled exactly; the error names the parameter.
func ParseStatusParam(name, v string, required bool) (Status, error) {
	if v == "" {
		if required {
			return "", invalid("missing %s: one of UP, DOWN, STARTING, OUT_OF_SERVICE, UNKNOWN", name)
		}
		return "", nil
	}
	st, ok := ParseStatus(v)
	if !ok {
		return "", invalid("invalid %s %q: one of UP, DOWN, STARTING, OUT_OF_SERVICE, UNKNOWN", name, v)
	}
	return st, nil
}

// Validate checks a registration the way ApplicationResource.addInstance
// does, in the same order and with the same messages. pathApp is the
// application name the request addressed (the URL, or a replication item's
// appName); "" skips that check.
func (in *Instance) Validate(pathApp string) error {
	switch {
	case strings.TrimSpace(in.ID()) == "":
		return invalid("Missing instanceId")
	case strings.TrimSpace(in.HostName) == "":
		return invalid("Missing hostname")
	case strings.TrimSpace(in.IPAddr) == "":
		return invalid("Missing ip address")
	case strings.TrimSpace(in.App) == "":
		return invalid("Missing appName")
	case pathApp != "" && !strings.EqualFold(pathApp, in.App):
		return invalid("Mismatched appName, expecting %s but was %s", strings.ToUpper(pathApp), in.App)
	case strings.TrimSpace(in.DataCenterInfo.Name) == "":
		return invalid("Missing dataCenterInfo Name")
	}
	if in.Status != "" {
		if _, ok := ParseStatus(string(in.Status)); !ok {
			return invalid("Invalid status %q", in.Status)
		}
	}
	return nil
}

// evalStatus is Eureka's instance status rule chain (DownOrStarting,
// OverrideExists, LeaseExists, AlwaysMatch). Caller holds r.mu.
func (r *Registry) evalStatus(in *Instance, existing *lease, fromPeer bool) Status {
	if in.Status != StatusUp && in.Status != StatusOutOfService {
		return in.Status
	}
	override, ok := r.overrides[in.ID()]
	return r.evalStatusWith(in, existing, fromPeer, override, ok)
}

// evalStatusWith is evalStatus with in's override-map entry looked up
// by the caller (the heartbeat, which sends it on too).
func (r *Registry) evalStatusWith(in *Instance, existing *lease, fromPeer bool, override Status, hasOverride bool) Status {
	if in.Status != StatusUp && in.Status != StatusOutOfService {
		return in.Status
	}
	if hasOverride {
		return override
	}
	if !fromPeer && existing != nil {
		if s := existing.ownInst().Status; s == StatusUp || s == StatusOutOfService {
			return s
		}
	}
	return in.Status
}

// dirtyOutcome is what a heartbeat's lastDirtyTimestamp says about the
// sender's copy compared with the stored one.
type dirtyOutcome uint8

const (
	dirtySame  dirtyOutcome = iota // equal, absent, or not compared
	dirtyNewer                     // the sender's copy is newer: it registers again
	dirtyOlder                     // a peer's copy is older: it adopts ours (409)
)

// compareDirty is InstanceResource.validateDirtyTimestamp, the one place
// that decides the dirty-timestamp policy (eureka.server.sync-when-timestamp-differs).
// A client's older copy is ignored, as in Eureka; only a peer is told.
func (r *Registry) compareDirty(sent time.Time, fromPeer bool, stored *Instance) dirtyOutcome {
	if sent.IsZero() || !r.syncTS {
		return dirtySame
	}
	s, st := sent.UnixMilli(), stored.LastDirtyTimestamp.UnixMilli()
	switch {
	case s > st:
		return dirtyNewer
	case s < st && fromPeer:
		return dirtyOlder
	}
	return dirtySame
}
