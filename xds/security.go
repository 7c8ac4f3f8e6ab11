package xds

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"slices"
	"strings"
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
	if s.cfg.GetCertificate != nil {
		// The main port's certificate source, called at each handshake:
		// a rotating source rotates the xDS port's certificate too.
		out = append(out, grpc.Creds(credentials.NewTLS(&tls.Config{GetCertificate: s.cfg.GetCertificate, MinVersion: tls.VersionTLS12})))
	}
	if len(s.cfg.Credentials) > 0 {
		out = append(out, grpc.ChainUnaryInterceptor(s.unaryAuth), grpc.ChainStreamInterceptor(s.streamAuth))
	}
	return out
}

func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	user, err := s.authenticate(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if r, ok := req.(interface{ GetNode() *core.Node }); ok { // the per-type Fetch calls
		if err := s.userMayRead(user, keyOf(r.GetNode(), false).ns); err != nil {
			return nil, err
		}
	}
	return next(ctx, req)
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
	user, err := s.authenticate(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return next(srv, userStream{ss, context.WithValue(ss.Context(), userKey{}, user)})
}

// userStream carries the authenticated user to the stream's open callback
// (opened), where the stream is known by its id.
type userStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (u userStream) Context() context.Context { return u.ctx }

type userKey struct{}

// opened records the user of a stream that streamAuth let in.
func (s *Server) opened(ctx context.Context, sk streamKey) error {
	if user, ok := ctx.Value(userKey{}).(string); ok {
		s.mu.Lock()
		s.users[sk] = user
		s.mu.Unlock()
	}
	return nil
}

// mayRead refuses a stream whose node names a namespace its user may not
// read (the stream ends with PERMISSION_DENIED).
func (s *Server) mayRead(sk streamKey, n *core.Node) error {
	if len(s.cfg.Namespaces) == 0 || n == nil {
		return nil
	}
	s.mu.Lock()
	user, ok := s.users[sk]
	s.mu.Unlock()
	if !ok {
		return nil // no credentials are required (the interceptors let every call in)
	}
	return s.userMayRead(user, keyOf(n, false).ns)
}

func (s *Server) userMayRead(user, ns string) error {
	allowed, limited := s.cfg.Namespaces[user]
	if !limited || slices.Contains(allowed, ns) {
		return nil
	}
	s.refusals.log(s, "xds call refused: the user may not read this namespace", "user", user, "namespace", ns)
	return status.Errorf(codes.PermissionDenied, "xds: user %q may not read namespace %q", user, ns)
}

// errUnauthenticated is the refusal of a call without valid credentials.
var errUnauthenticated = status.Error(codes.Unauthenticated, "xds: this goreka requires credentials (authorization: Basic, the main port's users)")

// authenticate checks the call's authorization metadata against the
// users: Basic, one of Config.Credentials. It returns the user.
func (s *Server) authenticate(ctx context.Context, method string) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, h := range md.Get("authorization") {
		if user, ok := s.validBasic(h); ok {
			return user, nil
		}
	}
	from := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		from = p.Addr.String()
	}
	s.refusals.log(s, "xds call refused: no valid credentials", "method", method, "remote", from)
	return "", errUnauthenticated
}

func (s *Server) validBasic(h string) (string, bool) {
	const prefix = "basic "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[len(prefix):]))
	if err != nil {
		return "", false
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok {
		return "", false
	}
	want, known := s.cfg.Credentials[user]
	// Compared whether or not the user is known, so that the time does
	// not tell which users exist.
	eq := subtle.ConstantTimeCompare([]byte(pass), []byte(want)) == 1
	return user, known && eq && want != "" // a user without a password (a certificate's) never matches
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
