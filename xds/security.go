package xds

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"strings"
	"sync"
	"time"

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
	if err := s.authenticate(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return next(ctx, req)
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
	if err := s.authenticate(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return next(srv, ss)
}

// errUnauthenticated is the refusal of a call without valid credentials.
var errUnauthenticated = status.Error(codes.Unauthenticated, "xds: this goreka requires credentials (authorization: Basic, the main port's users)")

// authenticate checks the call's authorization metadata against the
// users: Basic, one of Config.Credentials.
func (s *Server) authenticate(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, h := range md.Get("authorization") {
		if s.validBasic(h) {
			return nil
		}
	}
	from := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		from = p.Addr.String()
	}
	s.refusals.log(s, "xds call refused: no valid credentials", "method", method, "remote", from)
	return errUnauthenticated
}

func (s *Server) validBasic(h string) bool {
	const prefix = "basic "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[len(prefix):]))
	if err != nil {
		return false
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok {
		return false
	}
	want, known := s.cfg.Credentials[user]
	// Compared whether or not the user is known, so that the time does
	// not tell which users exist.
	eq := subtle.ConstantTimeCompare([]byte(pass), []byte(want)) == 1
	return known && eq
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
