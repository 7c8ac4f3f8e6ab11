package xds

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// RESTPaths are the REST-JSON discovery paths (Envoy's api_type REST
// polling), each with the type it serves. The server's HTTP edge mounts
// the Handler at each.
var RESTPaths = map[string]string{
	resource.FetchEndpoints: resource.EndpointType,
	resource.FetchClusters:  resource.ClusterType,
	resource.FetchListeners: resource.ListenerType,
	resource.FetchRoutes:    resource.RouteType,
}

// maxRESTBody bounds a REST discovery request: a node and a list of names.
const maxRESTBody = 1 << 20

// Handler serves the REST-JSON form of xDS: POST a protojson
// DiscoveryRequest to one of RESTPaths, get a DiscoveryResponse whose
// version_info is the registry revision, or 304 when the request's
// version_info is already the current one (Envoy keeps what it has). The
// node picks the namespace and kind as on the gRPC port. A body that is not
// a DiscoveryRequest, a type_url that contradicts the path or a path that
// is not one of RESTPaths is a 400, an unattached namespace a 404. A nil
// Server has none (nil: xDS disabled).
func (s *Server) Handler() http.Handler {
	if s == nil {
		return nil
	}
	return http.HandlerFunc(s.serveREST)
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, format string, args ...any) {
		http.Error(w, "xds: "+fmt.Sprintf(format, args...), code)
	}
	typeURL, ok := RESTPaths[r.URL.Path]
	if !ok {
		fail(http.StatusBadRequest, "unknown discovery path %q (serves %s, %s, %s, %s)", r.URL.Path,
			resource.FetchClusters, resource.FetchEndpoints, resource.FetchListeners, resource.FetchRoutes)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, "%s takes POST", r.URL.Path)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRESTBody))
	if err != nil {
		fail(http.StatusBadRequest, "request body: %v (at most %d bytes)", err, maxRESTBody)
		return
	}
	req := &discovery.DiscoveryRequest{}
	if err := protojson.Unmarshal(body, req); err != nil {
		fail(http.StatusBadRequest, "body is not a JSON envoy.service.discovery.v3.DiscoveryRequest: %v", err)
		return
	}
	if req.TypeUrl != "" && req.TypeUrl != typeURL {
		fail(http.StatusBadRequest, "type_url %q on %s, which serves %s", req.TypeUrl, r.URL.Path, typeURL)
		return
	}
	req.TypeUrl = typeURL
	if s.cfg.Identify != nil {
		// The main port's edge authenticated the caller for this route
		// (the handler is also usable without it); a user restricted to
		// some namespaces may not name another one in its node.
		user, nss, ok := s.cfg.Identify(r.Header.Get("Authorization"), r.TLS)
		if !ok {
			fail(http.StatusUnauthorized, "credentials required")
			return
		}
		if err := s.identityMayRead(identity{user: user, namespaces: nss}, keyOf(req.GetNode(), false).ns); err != nil {
			fail(http.StatusForbidden, "%s", status.Convert(err).Message())
			return
		}
	}
	resp, err := s.fetch(req)
	switch {
	case errors.Is(err, errNotModified):
		w.WriteHeader(http.StatusNotModified)
		return
	case status.Code(err) == codes.NotFound:
		fail(http.StatusNotFound, "%s", status.Convert(err).Message())
		return
	case err != nil:
		fail(http.StatusInternalServerError, "%v", err)
		return
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(resp)
	if err != nil {
		fail(http.StatusInternalServerError, "%v", err)
		return
	}
	s.pushes.WithLabelValues(typeName(typeURL)).Inc()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

var errNotModified = errors.New("xds: not modified")

// fetch answers one REST request from its node's group: the resources it
// names (all of the type when it names none), at the revision of the
// cache's last update: the cache's bytes, as the gRPC port sends them.
func (s *Server) fetch(req *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	g, err := s.group(req.GetNode())
	if err != nil {
		return nil, err
	}
	sp := s.spaceOf(g.key.ns)
	sp.mu.Lock()
	picked, version := g.cache(req.GetTypeUrl()).pick(req.GetResourceNames())
	sp.mu.Unlock()
	if req.GetVersionInfo() == version {
		return nil, errNotModified
	}
	if req.GetTypeUrl() == resource.ClusterType {
		if picked, err = restClusters(picked, req.GetNode()); err != nil {
			return nil, err
		}
	}
	return &discovery.DiscoveryResponse{VersionInfo: version, TypeUrl: req.GetTypeUrl(), Resources: picked}, nil
}

// Node metadata of a REST-polling Envoy.
const (
	// NodeRESTCluster names the Envoy cluster that reaches goreka's main
	// port, for the EDS polls of the clusters it is given (default
	// goreka_xds).
	NodeRESTCluster = "goreka.rest-cluster"
	// NodeRESTRefresh is the EDS poll interval, a Go duration (default 1s).
	NodeRESTRefresh = "goreka.rest-refresh-delay"
)

// restClusters gives clusters sent over REST an EDS config that polls
// goreka over REST too: ADS is what a REST-polling Envoy does not have,
// and it cannot be told "the same server" (SelfConfigSource is not
// implemented by Envoy), so the node names the cluster it reaches goreka
// by. The clusters are copies: the cached ones are shared.
func restClusters(in []*anypb.Any, n *core.Node) ([]*anypb.Any, error) {
	md := n.GetMetadata().GetFields()
	name := md[NodeRESTCluster].GetStringValue()
	if name == "" {
		name = "goreka_xds"
	}
	delay := time.Second
	if d, err := time.ParseDuration(md[NodeRESTRefresh].GetStringValue()); err == nil && d > 0 {
		delay = d
	}
	src := &core.ConfigSource{
		ResourceApiVersion: core.ApiVersion_V3,
		ConfigSourceSpecifier: &core.ConfigSource_ApiConfigSource{ApiConfigSource: &core.ApiConfigSource{
			ApiType: core.ApiConfigSource_REST, TransportApiVersion: core.ApiVersion_V3,
			ClusterNames: []string{name}, RefreshDelay: durationpb.New(delay),
		}},
	}
	out := make([]*anypb.Any, len(in))
	for i, a := range in {
		c := &cluster.Cluster{}
		if err := proto.Unmarshal(a.GetValue(), c); err != nil {
			return nil, err
		}
		c.GetEdsClusterConfig().EdsConfig = src
		var err error
		if out[i], err = marshalAny(resource.ClusterType, c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// spaceOf is the attached namespace ns (nil if none).
func (s *Server) spaceOf(ns string) *space {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spaces[ns]
}
