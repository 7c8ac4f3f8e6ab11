// Package suite is the real-client compatibility suite: it builds the client agents under compat/agents,
// starts the server under test (goreka or the stock Spring Eureka server) behind counting reverse proxies,
// and runs the scenarios of compat/README.md against every client.
//
// Everything lives in _test.go files behind the build tag compat, so a plain go test ./... skips it:
//
//	go test -tags compat ./compat/suite -v -timeout 25m
package suite
