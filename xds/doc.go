// Package xds serves the registry to Envoy and to proxyless gRPC clients
// (grpc-go, grpc-java, grpcio resolving xds:///name) over the xDS protocol.
//
// Every application is published under its lower-cased name and under each
// of its VIP address pieces: a cluster (EDS, fed over ADS), its
// ClusterLoadAssignment, and, for gRPC clients only, the api_listener
// Listener named exactly as the target and its RouteConfiguration. Envoy
// nodes get clusters and endpoints only; the two kinds never see each
// other's listeners. Statuses map to health (UP healthy; DOWN and STARTING
// unhealthy; OUT_OF_SERVICE draining; UNKNOWN unknown), metadata zone (else
// the AWS availability zone) is the locality, metadata weight (1-128) the
// endpoint weight, and every metadata entry is put under
// filter_metadata["envoy.lb"] for Envoy's subset load balancer.
//
// Why it is built this way:
//
//   - The protocol is go-control-plane's (github.com/envoyproxy/go-control-plane):
//     the reference implementation of the xDS server side, with state of
//     the world, delta and ADS, used by the projects around Envoy. goreka
//     supplies the cache it serves from (router): writing the protocol's
//     nonce, ACK and NACK handling again would be a second, less tested copy.
//   - Resources are built per group, never per node: a group is (namespace,
//     client kind, the node's zone when zone priority applies). node.id is
//     unique per pod, so per-node snapshots (the default IDHash) would build
//     the same resources once per client. Nodes pick a namespace with
//     metadata goreka.namespace=NAME (default otherwise); the kind is gRPC
//     when the node's user_agent_name says gRPC (grpc-go sends "gRPC Go"),
//     Envoy otherwise; metadata goreka.client=grpc|envoy overrides.
//   - Each group keeps one cache per resource type (typed.go), goreka's
//     own cachev3.Cache rather than go-control-plane's LinearCache, which
//     answered every response by walking and cloning the stream's whole
//     subscription (O(names) per stream per change). A change rebuilds
//     the names of the application it touched, each resource is
//     marshalled once and its bytes shared by every stream (an
//     assignment as the bytes of its localities, deflated when large,
//     shared by every zone: a zone changes only their priorities,
//     patched in as it is sent, render.go), an index name -> streams
//     wakes only the streams subscribed to it (wildcard ones without
//     scanning theirs), and each stream's state is kept across its
//     watches (the router binds each request to its stream), so that an
//     ACK costs no re-registration.
//   - Memory is what the registry's own is compared with (issue 26: xDS
//     adds at most a quarter): a stream's state is by interned name id
//     (bitsets and a slice of marks, ids.go), requests' names are
//     replaced by the server's one copy of each name before
//     go-control-plane keys its subscription with them, watchers keep no
//     request, and the index keeps per lease a pointer, a revision and a
//     down cause in a slot found by a hash of its key (index.go).
//   - The gRPC port's codec (codec.go) is gRPC's proto codec except that
//     a response is encoded around its resources' bytes, handed to the
//     transport as they are, instead of into a copy of the whole message
//     per stream (a first answer at 100k instances is ~10 MB per stream),
//     and a state-of-the-world request's resource names are decoded as
//     the name table's copies (an Envoy's every ACK names every cluster).
//     The bytes on the wire are proto.Marshal's.
//   - State-of-the-world EDS and RDS answers carry just the changed
//     resources (the protocol allows it); CDS and LDS ones every
//     subscribed resource (it requires it). A request naming one resource
//     (a gRPC client asks for the one listener it needs) is answered with
//     it, which the snapshot cache in ADS mode does not do while the
//     snapshot holds others of its type.
//   - Each attached namespace is fed from its registry's ordered change
//     stream (registry.Subscribe), as the read API's index is: a view at
//     subscription, then the events in revision order, batched while they
//     queue; a *registry.LaggedError makes it resubscribe and rebuild from a
//     new view. No reader polls the registry.
//   - gRPC clients get one locality per instance (sub_zone = instance id):
//     grpc-go's round_robin ignores endpoint weights, and only locality
//     weights split its traffic, so that weights 90/10 give 90/10. Envoy
//     gets one locality per zone with weighted endpoints. Priorities run
//     0, 1 without gaps (grpc-go rejects a gap): the node's zone is 0 and
//     the others 1 only when the node's zone has endpoints.
//   - version_info is the registry revision of the change that produced
//     the response (version.go), so that what a client ACKed compares with
//     the registry; Clients and Resolve (status.go) tell operators who is
//     connected, what each ACKed or NACKed, and what a name resolves to.
//   - The REST-JSON form (rest.go, Handler) is served on the main port,
//     behind its edge (authentication, metrics); its clusters poll their
//     endpoints over REST on the cluster the node names
//     (goreka.rest-cluster), as Envoy cannot be told "the same server".
//   - The gRPC port takes the main port's certificate source (a
//     GetCertificate hook, so that a rotating source rotates it too) and
//     its users: Basic credentials in the call's authorization metadata,
//     checked by a unary and a stream interceptor (security.go).
//   - An application whose last instance goes loses its cluster (and
//     listener) at once, and its ClusterLoadAssignment is replaced by an
//     empty one: state-of-the-world EDS cannot say "deleted", and an Envoy
//     that declared the cluster itself must learn that it has no endpoints
//     rather than keep the old ones. Two feeder ticks later (5 s each) the
//     empty assignment is deleted, so that names gone for good are not
//     kept forever.
//   - Every metadata entry reaches every client of the namespace
//     (filter_metadata["envoy.lb"]); Start logs that once.
package xds
