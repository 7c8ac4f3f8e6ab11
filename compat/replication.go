package compat

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/goreka/goreka/registry"
)

// ReplicationAction is the action of one replicated operation, spelled as
// PeerAwareInstanceRegistryImpl.Action.
type ReplicationAction string

// The actions a peer batch carries.
const (
	ActionRegister             ReplicationAction = "Register"
	ActionHeartbeat            ReplicationAction = "Heartbeat"
	ActionCancel               ReplicationAction = "Cancel"
	ActionStatusUpdate         ReplicationAction = "StatusUpdate"
	ActionDeleteStatusOverride ReplicationAction = "DeleteStatusOverride"
)

// ReplicationItem is one entry of a peer batch (Eureka's
// ReplicationInstance). Empty strings and a false HasLastDirty mean absent.
type ReplicationItem struct {
	AppName, ID        string
	LastDirtyTimestamp int64 // epoch millis
	HasLastDirty       bool  // false = absent
	Status             string
	OverriddenStatus   string
	Instance           *registry.LeaseView // Register only (decoded instanceInfo)
	Action             ReplicationAction
}

// ReplicationResponse is the answer to one item (ReplicationInstanceResponse).
// Entity is nil when there is none (everything but a 409 heartbeat).
type ReplicationResponse struct {
	StatusCode int
	Entity     *registry.LeaseView
}

// AppendReplicationList appends {"replicationList":[...]} with, per item,
// exactly the keys ReplicationInstance has and only those that are set:
// appName, id, lastDirtyTimestamp (number), overriddenStatus, status,
// instanceInfo (the legacy instance object, no wrapper), action. The Java
// peer rejects any other key.
func AppendReplicationList(dst []byte, items []ReplicationItem) []byte {
	dst = append(dst, `{"replicationList":[`...)
	for i := range items {
		it := &items[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		sep := false
		key := func(k string) {
			if sep {
				dst = append(dst, ',')
			}
			sep = true
			dst = append(dst, k...)
		}
		str := func(k, v string) {
			if v != "" {
				key(k)
				dst = appendJSONString(dst, v)
			}
		}
		str(`"appName":`, it.AppName)
		str(`"id":`, it.ID)
		if it.HasLastDirty {
			key(`"lastDirtyTimestamp":`)
			dst = strconv.AppendInt(dst, it.LastDirtyTimestamp, 10)
		}
		str(`"overriddenStatus":`, it.OverriddenStatus)
		str(`"status":`, it.Status)
		if it.Instance != nil && it.Instance.Instance != nil {
			key(`"instanceInfo":`)
			dst = AppendInstanceBody(dst, it.Instance)
		}
		str(`"action":`, string(it.Action))
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

type jsonReplicationItem struct {
	AppName            wireValue       `json:"appName"`
	ID                 wireValue       `json:"id"`
	LastDirtyTimestamp wireValue       `json:"lastDirtyTimestamp"`
	OverriddenStatus   wireValue       `json:"overriddenStatus"`
	Status             wireValue       `json:"status"`
	InstanceInfo       json.RawMessage `json:"instanceInfo"`
	Action             wireValue       `json:"action"`
}

// DecodeReplicationList reads a peer batch. Only a body that is not a
// {"replicationList":[...]} document is an error: an item that is
// malformed or lacks fields is returned with what could be read (a bad
// instanceInfo leaves Instance nil, a bad lastDirtyTimestamp leaves
// HasLastDirty false), so the caller can answer that item alone.
func DecodeReplicationList(body []byte) ([]ReplicationItem, error) {
	if items, ok := fastReplicationList(body); ok {
		return items, nil
	}
	return slowReplicationList(body)
}

// slowReplicationList is DecodeReplicationList with encoding/json.
func slowReplicationList(body []byte) ([]ReplicationItem, error) {
	raws, err := rootList(body, "replicationList")
	if err != nil {
		return nil, err
	}
	items := make([]ReplicationItem, len(raws))
	for i, raw := range raws {
		var j jsonReplicationItem
		if err := json.Unmarshal(raw, &j); err != nil {
			continue // left as a zero item: no action, answered as an error
		}
		items[i] = j.item(embeddedInstance(j.InstanceInfo))
	}
	return items, nil
}

// item is the ReplicationItem of j with the decoded instanceInfo in.
func (j *jsonReplicationItem) item(in *registry.LeaseView) ReplicationItem {
	it := ReplicationItem{
		AppName:          j.AppName.s,
		ID:               j.ID.s,
		Status:           j.Status.s,
		OverriddenStatus: j.OverriddenStatus.s,
		Action:           ReplicationAction(j.Action.s),
		Instance:         in,
	}
	if j.LastDirtyTimestamp.ok {
		if n, err := parseInt(j.LastDirtyTimestamp, "lastDirtyTimestamp"); err == nil {
			it.LastDirtyTimestamp, it.HasLastDirty = n, true
		}
	}
	return it
}

// embeddedInstance decodes an unwrapped instance object, nil if absent or bad.
func embeddedInstance(raw json.RawMessage) *registry.LeaseView {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	v, err := decodeInstanceJSON(raw)
	if err != nil {
		return nil
	}
	return v
}

// rootList returns the elements of the array under the top-level key root.
func rootList(body []byte, root string) ([]json.RawMessage, error) {
	raw, err := rootJSON(body, root)
	if err != nil {
		return nil, err
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, decodeErr(JSON, strconv.Quote(root)+" is not an array", err)
	}
	return list, nil
}

// AppendReplicationResponses appends {"responseList":[...]}: per item
// statusCode and, when there is one, responseEntity (the legacy instance
// object, no wrapper). Nothing else: the Java peer rejects unknown keys.
func AppendReplicationResponses(dst []byte, rs []ReplicationResponse) []byte {
	dst = append(dst, `{"responseList":[`...)
	for i := range rs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"statusCode":`...)
		dst = strconv.AppendInt(dst, int64(rs[i].StatusCode), 10)
		if e := rs[i].Entity; e != nil && e.Instance != nil {
			dst = append(dst, `,"responseEntity":`...)
			dst = AppendInstanceBody(dst, e)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

type jsonReplicationResponse struct {
	StatusCode     wireValue       `json:"statusCode"`
	ResponseEntity json.RawMessage `json:"responseEntity"`
}

// DecodeReplicationResponses reads a peer's answer to a batch. As for
// requests, only a body that is not a {"responseList":[...]} document is
// an error; an unreadable item has StatusCode 0 and an unreadable entity
// is nil.
func DecodeReplicationResponses(body []byte) ([]ReplicationResponse, error) {
	raws, err := rootList(body, "responseList")
	if err != nil {
		return nil, err
	}
	rs := make([]ReplicationResponse, len(raws))
	for i, raw := range raws {
		var j jsonReplicationResponse
		if err := json.Unmarshal(raw, &j); err != nil {
			continue
		}
		if j.StatusCode.ok {
			if n, err := parseInt(j.StatusCode, "statusCode"); err == nil && n >= 0 && n <= 999 {
				rs[i].StatusCode = int(n)
			}
		}
		rs[i].Entity = embeddedInstance(j.ResponseEntity)
	}
	return rs, nil
}

// RenewalsPath is goreka's aggregated-heartbeat endpoint, relative to a
// Eureka base URL (http://host:port/eureka/): a relay posts there the
// heartbeats of the clients it holds as a replication list of Heartbeat
// items, each applied as the instance's own heartbeat and answered in order
// (AppendReplicationResponses). A stock Eureka server answers 404.
const RenewalsPath = "goreka/renewals"

// RevisionHeader is the header in which a goreka server names the registry
// revision a registry document is exactly (the cache's Value.Revision, the
// start-up sync's trailer); EpochHeader names the sequence that revision
// counts in (registry.Epoch: revisions of two registries do not compare).
// One definition for the server, which sends them, and eurekahttp, which
// reads them; the read API's watch sends EpochHeader under the same name
// (server/api/wire).
const (
	RevisionHeader = "X-Goreka-Revision"
	EpochHeader    = "X-Goreka-Epoch"
)
