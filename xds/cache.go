package xds

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/registry"
)

// Node metadata keys goreka reads.
const (
	// NodeNamespace selects the namespace a node sees (default otherwise).
	NodeNamespace = "goreka.namespace"
	// NodeClient overrides the client kind: "grpc" or "envoy".
	NodeClient = "goreka.client"
)

// served are the types every group answers. A request for another type
// is refused (InvalidArgument) without allocating anything for it: the
// type URL is the client's, on an unauthenticated port.
var served = []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType}

// groupKey is what the resources a node gets depend on. Nodes with the same
// key share one set of caches: resources are built per group, never per
// node (node.id is unique per pod).
type groupKey struct {
	ns   string
	kind Kind
	zone string // the node's zone when zone priority applies, else ""
}

func (k groupKey) String() string {
	return fmt.Sprintf("%s/%s/%s", k.ns, k.kind, k.zone)
}

// keyOf works out a node's group.
func keyOf(n *core.Node, zonePriority bool) groupKey {
	md := n.GetMetadata().GetFields()
	k := groupKey{ns: md[NodeNamespace].GetStringValue(), kind: kindOf(n)}
	if k.ns == "" {
		k.ns = namespace.Default
	}
	if zonePriority {
		k.zone = n.GetLocality().GetZone()
	}
	return k
}

// kindOf tells a proxyless gRPC client (grpc-go sends user_agent_name
// "gRPC Go", grpc-java "gRPC Java", grpcio "gRPC Python") from Envoy; node
// metadata goreka.client overrides.
func kindOf(n *core.Node) Kind {
	switch strings.ToLower(n.GetMetadata().GetFields()[NodeClient].GetStringValue()) {
	case "grpc":
		return GRPC
	case "envoy":
		return Envoy
	}
	if strings.Contains(strings.ToLower(n.GetUserAgentName()), "grpc") {
		return GRPC
	}
	return Envoy
}

// group is the caches of one groupKey: one typed cache per type, so that
// a change resends only the resources it touched, and a request naming
// some resources (a gRPC client names the one listener it needs) is
// answered with those, whatever else exists.
//
// Only the assignments depend on the node's zone: the groups of one kind
// share their kind's clusters, listeners and routes (one cache each, the
// kindSet's), and a zone's assignment of a name is the zone-less one's
// parts (the same bytes, render.go) rendered with the zone's priorities
// when the name has endpoints in that zone, the only case where zone
// priority changes it. So a zone costs one EDS cache, not a copy of the
// endpoints.
//
// The caches hold the resources marshalled, and are what a push compares
// a rebuilt resource with: an equal one is not handed to them (a SotW CDS
// answer is the full state, so resending equal clusters would cost
// O(apps) per change per client). The messages are not kept.
type group struct {
	key    groupKey
	opts   buildOptions
	set    *kindSet
	caches map[string]*typed // one per served type, fixed when the group is built: the kindSet's, and its own EDS
}

// kindSet is what the groups of one client kind share: the caches of the
// zone-independent types (CDS, LDS, RDS), the names that have a cluster,
// and the groups themselves by zone (the zone-less one holds the
// zone-less assignments).
type kindSet struct {
	kind   Kind
	caches map[string]*typed // CDS, LDS, RDS
	// present is the names that have a cluster (and, for gRPC, a listener
	// and route), to delete them when their last instance goes.
	present map[string]bool
	zones   map[string]*group
}

// cache is the cache of typeURL, nil for a type that is not served.
func (g *group) cache(typeURL string) *typed { return g.caches[typeURL] }

// space is one namespace: its index, fed from its registry's change stream,
// and its groups.
type space struct {
	name   string
	vers   *versions // the server's: every cache is added to it
	mu     sync.Mutex
	idx    *index
	groups map[groupKey]*group
	kinds  map[Kind]*kindSet
	// sweepRev and sweeps number the pushes at one revision that were no
	// registry change (expiry sweeps, remote regions; versionLocked).
	sweepRev int64
	sweeps   int
	// vanished is the names whose last instance went since the last tick
	// (their empty assignment was pushed), due the names of the tick
	// before: a tick deletes the due ones' assignments, so that every
	// subscribed client is sent "no endpoints" first, and a name gone for
	// good is not kept as an empty assignment forever.
	vanished, due map[string]struct{}
}

// optsLocked is o with the namespace's expired leases and remote regions.
func (sp *space) optsLocked(o buildOptions) buildOptions {
	o.expired, o.remote = sp.idx.expired, sp.idx.remoteOf
	return o
}

// versionLocked is the version of the namespace's resources: the
// revision, with ".N" after the Nth sweep that changed them at it.
func (sp *space) versionLocked() string {
	v := strconv.FormatInt(sp.idx.rev, 10)
	if sp.sweepRev == sp.idx.rev && sp.sweeps > 0 {
		v += "." + strconv.Itoa(sp.sweeps)
	}
	return v
}

// swept counts a push that is no registry change (an expiry sweep, a
// remote region's new copy) before it is made.
func (sp *space) swept() {
	if sp.sweepRev != sp.idx.rev {
		sp.sweepRev, sp.sweeps = sp.idx.rev, 0
	}
	sp.sweeps++
}

// maxGroups bounds the groups of a namespace: the zone is the node's
// claim, so that clients naming ever new zones cannot make the server build
// ever more groups. Past it a new zone shares the zone-less group (no
// priorities) instead.
const maxGroups = 64

// groupFor returns the group of k, building it from the index the first
// time.
func (sp *space) groupFor(k groupKey, heldAsUnhealthy bool) *group {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if g := sp.groups[k]; g != nil {
		return g
	}
	if k.zone != "" && len(sp.groups) >= maxGroups {
		k.zone = ""
		if g := sp.groups[k]; g != nil {
			return g
		}
	}
	ks := sp.kindSetLocked(k.kind, heldAsUnhealthy)
	if k.zone == "" {
		sp.groups[k] = ks.zones[""]
		return ks.zones[""]
	}
	g := &group{key: k, opts: buildOptions{kind: k.kind, zone: k.zone, heldAsUnhealthy: heldAsUnhealthy}, set: ks, caches: maps.Clone(ks.caches)}
	// The zone's assignments are the zone-less ones' parts (shared),
	// rendered with its priorities for the names with endpoints in the
	// zone. A name that vanished keeps its empty assignment until the tick.
	init := ks.zones[""].cache(resource.EndpointType).snapshot()
	for name, b := range init {
		if b.cla != nil {
			init[name] = zoned(b.cla, k.zone)
		}
	}
	sp.newEDSLocked(g, init)
	ks.zones[k.zone] = g
	sp.groups[k] = g
	return g
}

// newEDSLocked gives g its own EDS cache, holding init.
func (sp *space) newEDSLocked(g *group, init map[string]body) {
	t := newTypedBodies(resource.EndpointType, init, sp.versionLocked())
	sp.vers.add(t)
	g.caches[resource.EndpointType] = t
}

// kindSetLocked returns the kindSet of kind, building it (and its
// zone-less group) from the index the first time.
func (sp *space) kindSetLocked(kind Kind, heldAsUnhealthy bool) *kindSet {
	if ks := sp.kinds[kind]; ks != nil {
		return ks
	}
	ks := &kindSet{kind: kind, caches: map[string]*typed{}, present: map[string]bool{}, zones: map[string]*group{}}
	init := map[string]map[string]body{}
	for _, t := range served {
		init[t] = map[string]body{}
	}
	base := buildOptions{kind: kind, heldAsUnhealthy: heldAsUnhealthy}
	o := sp.optsLocked(base)
	for name := range sp.idx.names() {
		r := build(name, sp.idx.views(name), o)
		for t, m := range r.each() {
			// A resource that cannot be marshalled (a string that is not
			// UTF-8) is left out; the next push of its name says why.
			if b, err := bodyOf(t, m); err == nil {
				init[t][name] = b
			}
		}
		if r.cluster != nil {
			ks.present[name] = true
		}
	}
	for _, t := range served {
		if t != resource.EndpointType {
			ks.caches[t] = newTypedBodies(t, init[t], sp.versionLocked())
			sp.vers.add(ks.caches[t])
		}
	}
	g := &group{key: groupKey{ns: sp.name, kind: kind}, opts: base, set: ks, caches: maps.Clone(ks.caches)}
	sp.newEDSLocked(g, init[resource.EndpointType])
	ks.zones[""] = g
	sp.kinds[kind] = ks
	return ks
}

// bodyOf is m as a typed cache holds it: an assignment in parts (one copy
// for every zone), anything else marshalled whole.
func bodyOf(typeURL string, m proto.Message) (body, error) {
	if cla, ok := m.(*endpoint.ClusterLoadAssignment); ok {
		c, err := splitCLA(cla)
		return body{cla: c}, err
	}
	a, err := marshalAny(typeURL, m)
	return whole(a), err
}

// each yields r's resources by type URL.
func (r resources) each() iter.Seq2[string, proto.Message] {
	return func(yield func(string, proto.Message) bool) {
		if !yield(resource.EndpointType, r.cla) {
			return
		}
		if r.cluster != nil && !yield(resource.ClusterType, r.cluster) {
			return
		}
		if r.listener != nil {
			if !yield(resource.ListenerType, r.listener) {
				return
			}
			yield(resource.RouteType, r.route)
		}
	}
}

// push rebuilds the touched names in every group and hands each cache the
// resources that changed. The caller holds sp.mu.
func (sp *space) pushLocked(touched map[string]struct{}, at time.Time) (err error) {
	for name := range touched {
		if sp.idx.known(name) {
			delete(sp.vanished, name)
			delete(sp.due, name)
		} else {
			sp.vanished[name] = struct{}{}
		}
	}
	views := make(map[string][]registry.LeaseView, len(touched))
	for name := range touched {
		views[name] = sp.idx.views(name)
	}
	version := sp.versionLocked()
	for _, ks := range sp.kinds {
		err = errors.Join(err, sp.pushKindLocked(ks, views, version, at))
	}
	return err
}

// pushKindLocked rebuilds the touched names (views) for one kind: its
// shared caches once, then each zone's assignments, sharing the zone-less
// one's bytes where the zone does not change it.
func (sp *space) pushKindLocked(ks *kindSet, views map[string][]registry.LeaseView, version string, at time.Time) (err error) {
	base := sp.optsLocked(ks.zones[""].opts)
	upd := map[string]map[string]body{}
	for _, t := range served {
		upd[t] = map[string]body{}
	}
	var del []string
	for name, vs := range views {
		r := build(name, vs, base)
		if r.cluster == nil && ks.present[name] {
			del = append(del, name)
			delete(ks.present, name)
		} else if r.cluster != nil {
			ks.present[name] = true
		}
		for t, m := range r.each() {
			b, e := bodyOf(t, m)
			if e != nil {
				err = errors.Join(err, fmt.Errorf("%s: %w", name, e))
				continue
			}
			if t == resource.EndpointType || !ks.caches[t].holds(name, b) {
				upd[t][name] = b // an assignment's parts, rendered and compared per zone below
			}
		}
	}
	for _, t := range served {
		// An assignment is not deleted here: an empty one replaces it
		// (see build), and a tick deletes it later (tickLocked).
		if t == resource.EndpointType {
			continue
		}
		var d []string
		if t == resource.ClusterType || ks.kind == GRPC {
			d = del
		}
		if len(upd[t]) == 0 && len(d) == 0 {
			continue
		}
		err = errors.Join(err, ks.caches[t].updateBodies(upd[t], d, version, at))
	}
	for zone, g := range ks.zones {
		c := g.cache(resource.EndpointType)
		eds := map[string]body{}
		for name, b := range upd[resource.EndpointType] {
			b = zoned(b.cla, zone)
			if !c.holds(name, b) {
				eds[name] = b
			}
		}
		if len(eds) > 0 {
			err = errors.Join(err, c.updateBodies(eds, nil, version, at))
		}
	}
	return err
}

// tickLocked deletes the assignments of the names that vanished before
// the previous tick and are still gone. The caller holds sp.mu.
func (sp *space) tickLocked(at time.Time) (err error) {
	var del []string
	for name := range sp.due {
		if !sp.idx.known(name) {
			del = append(del, name)
		}
	}
	sp.due, sp.vanished = sp.vanished, map[string]struct{}{}
	if len(del) == 0 {
		return nil
	}
	for _, ks := range sp.kinds {
		for _, g := range ks.zones {
			err = errors.Join(err, g.cache(resource.EndpointType).update(nil, del, sp.versionLocked(), at))
		}
	}
	return err
}

// versionPrefix makes versions of this process differ from a previous
// one's: a client reconnecting after a restart with an old version is sent
// everything again (the linear cache answers any version without its prefix).
var versionPrefix = "goreka-" + processID() + "-"

// router is the cache.Cache the xDS server runs on: it sends each request
// to the cache of its node's group and type.
type router struct{ s *Server }

var _ cachev3.Cache = router{}

func (rt router) cacheOf(n *core.Node, typeURL string) (*typed, error) {
	g, err := rt.s.group(n)
	if err != nil {
		return nil, err
	}
	c := g.cache(typeURL)
	if c == nil {
		return nil, status.Errorf(codes.InvalidArgument, "xds: type %q is not served by goreka", typeURL)
	}
	return c, nil
}

func (rt router) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, ch chan cachev3.Response) (func(), error) {
	c, err := rt.cacheOf(req.GetNode(), req.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	// req is the stream's own; the answers carry a request of their own
	// that names only the type (typed.go): goreka's response callbacks
	// must not read anything else of a response's request.
	req.VersionInfo = c.cacheVersion(req.GetVersionInfo())
	sk, keyed := rt.s.streamOf(req, c)
	return c.watch(sk, keyed, req, sub, ch)
}

func (rt router) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	c, err := rt.cacheOf(req.GetNode(), req.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	sk, keyed := rt.s.streamOf(req, c)
	return c.watchDelta(sk, keyed, req, sub, ch)
}

// Fetch is the REST form, not served yet.
func (rt router) Fetch(context.Context, *cachev3.Request) (cachev3.Response, error) {
	return nil, errors.New("xds: REST fetch is not implemented")
}

// nopLogger silences the caches' per-watch chatter; goreka logs what
// matters (NACKs, clients) from the server's callbacks.
var nopLogger log.Logger = log.LoggerFuncs{}
