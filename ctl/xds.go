package ctl

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/goreka/goreka/server/api/wire"
)

// xds lists the connected xDS clients (no arguments) or shows what NAME
// resolves to for a client of a kind and zone.
func (c *ctl) xds(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return c.xdsClients(ctx)
	}
	name, rest := args[0], args[1:]
	if strings.Contains(name, "=") {
		return failf(ExitUsage, "NAME first, then kind=envoy|grpc and zone=Z")
	}
	q, err := filterQuery(rest, "kind", "zone")
	if err != nil {
		return err
	}
	if len(q["kind"]) > 1 || len(q["zone"]) > 1 {
		return failf(ExitUsage, "kind and zone are given at most once")
	}
	kind := strings.ToLower(q.Get("kind"))
	if kind != "" && kind != "envoy" && kind != "grpc" {
		return failf(ExitUsage, "kind %q: envoy or grpc", q.Get("kind"))
	}
	cl, err := c.clientOf(c.server)
	if err != nil {
		return err
	}
	r, err := cl.XDSResolve(ctx, name, kind, q.Get("zone"))
	if err != nil {
		return c.failure(err)
	}
	if c.output == "json" {
		return c.json(r)
	}
	head := fmt.Sprintf("%s (%s", r.Name, r.Kind)
	if r.Zone != "" {
		head += ", node zone " + r.Zone
	}
	head += "): "
	if r.Cluster == "" {
		head += "no cluster"
	} else {
		head += "cluster " + r.Cluster
		if r.HTTP2 {
			head += " (HTTP/2)"
		}
	}
	if r.Listener != "" {
		head += ", listener " + r.Listener
	}
	head += ", revision " + strconv.FormatInt(r.Revision, 10)
	fmt.Fprintln(c.stdout, head)
	eps := slices.Clone(r.Endpoints)
	slices.SortStableFunc(eps, func(a, b wire.XDSEndpoint) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.Address, b.Address), cmp.Compare(a.Port, b.Port))
	})
	var rows [][]string
	for _, e := range eps {
		rows = append(rows, []string{net.JoinHostPort(e.Address, strconv.Itoa(e.Port)), e.Health, strconv.Itoa(e.Weight),
			cmp.Or(e.Zone, "-"), strconv.Itoa(e.Priority), strconv.Itoa(e.LocalityWeight), cmp.Or(e.SubZone, e.HostName, "-")})
	}
	c.table("ENDPOINT\tHEALTH\tWEIGHT\tZONE\tPRIORITY\tLOCALITY-WEIGHT\tINSTANCE/HOST", rows)
	fmt.Fprintf(c.stdout, "(%d endpoints)\n", len(eps))
	return nil
}

func (c *ctl) xdsClients(ctx context.Context) error {
	cl, err := c.clientOf(c.server)
	if err != nil {
		return err
	}
	a, err := cl.XDSClients(ctx)
	if err != nil {
		return c.failure(err)
	}
	if !a.Enabled {
		return failf(ExitFailed, "%s serves no xDS (goreka.xds.enabled=false)", cl.URL())
	}
	if c.output == "json" {
		return c.json(a)
	}
	cs := slices.Clone(a.Clients)
	slices.SortFunc(cs, func(x, y wire.XDSClient) int { return cmp.Or(cmp.Compare(x.Node, y.Node), cmp.Compare(x.Kind, y.Kind)) })
	var rows [][]string
	for _, x := range cs {
		var acked []string
		for _, t := range []string{"cds", "eds", "lds", "rds"} {
			if v, ok := x.Acked[t]; ok {
				acked = append(acked, t+"="+v)
			}
		}
		nack := "-"
		if n := x.LastNACK; n != nil {
			nack = strings.TrimSpace(n.Type+" "+n.Rejected) + ": " + n.Detail
		}
		rows = append(rows, []string{x.Node, x.Kind, x.Namespace, cmp.Or(x.Zone, "-"), cmp.Or(strings.Join(acked, " "), "-"), nack})
	}
	c.table("NODE\tKIND\tNAMESPACE\tZONE\tACKED\tLAST NACK", rows)
	fmt.Fprintf(c.stdout, "(%d clients)\n", len(cs))
	return nil
}
