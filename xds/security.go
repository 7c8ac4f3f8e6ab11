package xds

import (
	"context"
	"crypto/tls"
	"slices"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// serverOptions are the TLS and authentication options of the gRPC port.
func (s *Server) serverOptions() []grpc.ServerOption {
	var out []grpc.ServerOption
	if s.cfg.TLS != nil {
		// The main port's configuration, whose certificate source is
		// asked at each handshake: a rotated certificate rotates here too.
		out = append(out, grpc.Creds(credentials.NewTLS(s.cfg.TLS)))
	}
	if s.cfg.Identify != nil {
		out = append(out, grpc.ChainUnaryInterceptor(s.unaryAuth), grpc.ChainStreamInterceptor(s.streamAuth))
	}
	return out
}

// identity is who a call authenticated as: namespaces not nil are the
// only ones the user may read.
type identity struct {
	user       string
	namespaces []string
}

func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	id, err := s.authenticate(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if r, ok := req.(interface{ GetNode() *core.Node }); ok { // the per-type Fetch calls
		if err := s.identityMayRead(id, keyOf(r.GetNode(), false).ns); err != nil {
			return nil, err
		}
	}
	return next(ctx, req)
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
	id, err := s.authenticate(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return next(srv, identityStream{ss, context.WithValue(ss.Context(), identityKey{}, id)})
}

// identityStream carries the authenticated identity to the stream's open
// callback (opened), where the stream is known by its id.
type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (u identityStream) Context() context.Context { return u.ctx }

type identityKey struct{}

// opened records the identity of a stream that streamAuth let in.
func (s *Server) opened(ctx context.Context, sk streamKey) error {
	if id, ok := ctx.Value(identityKey{}).(identity); ok {
		s.mu.Lock()
		s.users[sk] = id
		s.mu.Unlock()
	}
	return nil
}

// mayRead checks every request of a stream: the node it names, when it
// names one (go-control-plane serves each request's own node), must stay
// in the stream's first namespace, and its user must be allowed to read
// it. seen is the stream's first node.
func (s *Server) mayRead(sk streamKey, seen, n *core.Node) error {
	if n == nil || seen == nil {
		return nil
	}
	ns := keyOf(n, false).ns
	if first := keyOf(seen, false).ns; ns != first {
		return status.Errorf(codes.InvalidArgument, "xds: a stream's node may not change namespace (%q, then %q)", first, ns)
	}
	s.mu.Lock()
	id, ok := s.users[sk]
	s.mu.Unlock()
	if !ok {
		return nil // no authentication (Identify is nil)
	}
	return s.identityMayRead(id, ns)
}

func (s *Server) identityMayRead(id identity, ns string) error {
	if id.namespaces == nil || slices.Contains(id.namespaces, ns) {
		return nil
	}
	s.refusals.log(s, "xds call refused: the user may not read this namespace", "user", id.user, "namespace", ns)
	return status.Errorf(codes.PermissionDenied, "xds: user %q may not read namespace %q", id.user, ns)
}

// errUnauthenticated is the refusal of a call without valid credentials.
var errUnauthenticated = status.Error(codes.Unauthenticated, "xds: this goreka requires credentials (authorization: Basic, or a client certificate, of the main port's users)")

// authenticate asks Identify about the call's authorization metadata and
// its connection's client certificate.
func (s *Server) authenticate(ctx context.Context, method string) (identity, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var st *tls.ConnectionState
	from := ""
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			st = &ti.State
		}
		if p.Addr != nil {
			from = p.Addr.String()
		}
	}
	auth := md.Get("authorization")
	if len(auth) == 0 {
		auth = []string{""}
	}
	for _, h := range auth {
		if user, nss, ok := s.cfg.Identify(h, st); ok {
			return identity{user: user, namespaces: nss}, nil
		}
	}
	s.refusals.log(s, "xds call refused: no valid credentials", "method", method, "remote", from)
	return identity{}, errUnauthenticated
}

// refusalEvery is the least time between two refusal log lines; the calls
// refused in between are counted in the next line.
const refusalEvery = 10 * time.Second

// rateLog is a log line that is written at most once per refusalEvery.
type rateLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (l *rateLog) log(s *Server, msg string, args ...any) {
	now := s.now()
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < refusalEvery {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	s.log.Warn(msg, append(args, "suppressed_since_last", n)...)
}
