package apiclient

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api/wire"
)

// Apps returns the applications with their instance counts by status
// (GET /goreka/api/v1/apps).
func (c *Client) Apps(ctx context.Context) (wire.AppsAnswer, error) {
	var a wire.AppsAnswer
	err := c.getJSON(ctx, c.hc, wire.Prefix+"/apps", &a)
	return a, err
}

// Pages returns the pages of GET /goreka/api/v1/instances for the query q,
// one after the other, following each page's continue token. q holds the
// API's filters: app, status, vip, svip, lifecycle, metadata.KEY
// (repeatable), and limit, the page size; the server checks them (an
// unknown or bad one is a *StatusError of 400 naming it). Each page has its
// own revision. The sequence ends after the last page or the first error.
func (c *Client) Pages(ctx context.Context, q url.Values) iter.Seq2[wire.InstancesPage, error] {
	return func(yield func(wire.InstancesPage, error) bool) {
		q := cloneQuery(q)
		for {
			var p wire.InstancesPage
			if err := c.getJSON(ctx, c.hc, wire.Prefix+"/instances?"+q.Encode(), &p); err != nil {
				yield(p, err)
				return
			}
			if !yield(p, nil) || p.Continue == "" {
				return
			}
			q.Set("continue", p.Continue)
		}
	}
}

// Instances reads every page of the query q (see Pages) and returns the
// instances of all of them, at the revision of the last page, with no
// continue token. Instances is never nil.
func (c *Client) Instances(ctx context.Context, q url.Values) (wire.InstancesPage, error) {
	all := wire.InstancesPage{Instances: []wire.Instance{}}
	for p, err := range c.Pages(ctx, q) {
		if err != nil {
			return all, err
		}
		all.Revision = p.Revision
		all.Instances = append(all.Instances, p.Instances...)
	}
	return all, nil
}

func cloneQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	return out
}

// Changes is the long poll (GET /goreka/api/v1/changes): the changes after
// revision since, at once if there are some, else the first ones within
// wait (at most the server's limit, 5 minutes by default), else none. Its
// Revision is the since of the next poll; since 0, or one no longer
// retained, answers a Snapshot instead. The wait is bounded by ctx only,
// not by the HTTP client's Timeout.
func (c *Client) Changes(ctx context.Context, since int64, wait time.Duration) (wire.ChangesAnswer, error) {
	var a wire.ChangesAnswer
	q := url.Values{"since": {strconv.FormatInt(since, 10)}, "wait": {wait.String()}}
	err := c.getJSON(ctx, c.stream, wire.Prefix+"/changes?"+q.Encode(), &a)
	return a, err
}

// EurekaStatus is the JSON of Eureka's /eureka/status.
type EurekaStatus struct {
	General     map[string]string `json:"generalStats"`
	Application map[string]string `json:"applicationStats"`
}

// Status returns the server's /eureka/status.
func (c *Client) Status(ctx context.Context) (EurekaStatus, error) {
	var st EurekaStatus
	err := c.getJSON(ctx, c.hc, "/eureka/status", &st)
	return st, err
}

// Override sets the status override of an instance (Eureka's PUT
// /eureka/apps/APP/ID/status?value=STATUS). The application name is upper
// cased, as Eureka stores it. A 404 (*StatusError) is an instance that is
// not registered.
func (c *Client) Override(ctx context.Context, app, id string, status registry.Status) error {
	return c.write(ctx, http.MethodPut, app, id, "/status?value="+url.QueryEscape(string(status)))
}

// RemoveOverride removes the status override of an instance (DELETE
// /eureka/apps/APP/ID/status).
func (c *Client) RemoveOverride(ctx context.Context, app, id string) error {
	return c.write(ctx, http.MethodDelete, app, id, "/status")
}

// Cancel cancels the lease of an instance (DELETE /eureka/apps/APP/ID); a
// static registration refuses it.
func (c *Client) Cancel(ctx context.Context, app, id string) error {
	return c.write(ctx, http.MethodDelete, app, id, "")
}

func (c *Client) write(ctx context.Context, method, app, id, suffix string) error {
	path := "/eureka/apps/" + url.PathEscape(strings.ToUpper(app)) + "/" + url.PathEscape(id) + suffix
	resp, err := c.do(ctx, c.hc, method, path)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
