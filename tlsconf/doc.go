// Package tlsconf builds goreka's TLS, server and client side, from what a
// Spring Boot user configures: keystores (PKCS12 through go-pkcs12, JKS
// through keystore-go) or PEM files, truststores, client-auth none, want or
// need, Java's protocol and IANA cipher names. key-alias picks the entry
// of a keystore with several; the names of a PKCS12 file's key entries are
// read beside go-pkcs12 (p12names.go), whose only view of them (ToPEM)
// refuses the attribute of Java's trusted certificate entries. A PKCS12
// keystore with several keys and trusted certificates together is refused
// with what to do.
//
// The material is held by a *Server or *Client and handed to each
// handshake (GetConfigForClient and GetCertificate on the server side;
// ConfigFor, one configuration per new client connection), so that Check,
// called by Poll every interval, can swap in changed files without a
// restart: open connections keep what they
// negotiated, the next handshake gets the new certificate or trust. A
// change is a change of the files' content, so a Kubernetes Secret volume's
// ..data symlink swap is one too. A new file that does not load (a key that
// does not match, a certificate expired or not yet valid, a wrong password)
// is logged once and the old material stays.
//
// Every problem found while loading is an *Error naming the property to
// fix and the file, for start-up errors that need no stack trace; where
// Spring Boot has words for it, in its words ("could not load store from",
// "keystore password was incorrect", "does not contain alias", the latter
// with the aliases of the keystore's key entries).
package tlsconf
