package ctl

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/goreka/goreka/apiclient"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api/wire"
)

// The exit codes of Run, as the usage says.
const (
	ExitOK          = 0
	ExitFailed      = 1 // the operation failed (refused, not found), or diff found differences
	ExitUsage       = 2
	ExitUnreachable = 3 // the server is unreachable, not open yet, or refused the credentials
)

const usage = `Usage: goreka ctl [flags] COMMAND [ARGS]

Commands:
  apps                          applications with instance counts by status
  instances [FILTER...]         instances; filters as the read API's, ANDed:
                                app=NAME status=UP vip=V svip=V lifecycle=up|suspect|held
                                metadata.KEY=VALUE (repeatable)
  watch [since=REV]             print every change as it happens (Ctrl-C ends;
                                -n N ends after N changes)
  override APP ID STATUS        set a status override (UP, DOWN, STARTING,
                                OUT_OF_SERVICE, UNKNOWN)
  remove-override APP ID        remove the status override
  cancel APP ID                 cancel the instance's lease
  status                        the server's /eureka/status and registry counts
  diff URL1 URL2                two nodes' registries side by side: missing on
                                URL2, extra on URL2, different status
  xds [NAME [kind=envoy|grpc] [zone=Z]]
                                the connected xDS clients; with NAME (an app or
                                a VIP address) what a client of that kind and
                                node zone is served: cluster, endpoints with
                                health, weight, zone, priority

Flags (anywhere on the line):
  -server URL    goreka's address (default $GOREKA_URL, else http://localhost:8761);
                 user:password@ in the URL is used for basic auth
  -user NAME, -password PASS   basic auth (default $GOREKA_USER, $GOREKA_PASSWORD)
  -o table|json  output: tables for people (default), JSON for scripts
  -namespace NAME  the namespace to work on (default $GOREKA_NAMESPACE, else
                 default: /eureka/); a -server URL ending in /ns/NAME/eureka/
                 names one too
  -timeout D     per request (default 10s; the watch has none)
  -n N           watch: exit after N changes

Exit codes: 0 ok; 1 the operation failed (refused, not found) or diff found
differences; 2 usage; 3 the server is unreachable, not open yet, or refused
the credentials.
`

// ctlError is an error with its exit code.
type ctlError struct {
	code int
	msg  string
}

func (e *ctlError) Error() string { return e.msg }

func failf(code int, format string, args ...any) error {
	return &ctlError{code, fmt.Sprintf(format, args...)}
}

// ctl holds a parsed command line.
type ctl struct {
	server, user, password string
	output                 string
	namespace              string // -namespace: "" or "default" is /eureka/
	timeout                time.Duration
	count                  int
	stdout                 io.Writer
	client                 *http.Client
}

// Run is goreka ctl: args are the arguments after "ctl", environ the
// environment (KEY=VALUE) it reads GOREKA_URL, GOREKA_USER,
// GOREKA_PASSWORD and GOREKA_NAMESPACE from. It returns the exit code;
// SIGINT and SIGTERM end a command (a watch cleanly) while it runs.
func Run(args, environ []string, stdout, stderr io.Writer) int {
	env := func(k string) string {
		for _, kv := range environ {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	c := &ctl{stdout: stdout}
	fs := flag.NewFlagSet("goreka ctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.server, "server", cmp.Or(env("GOREKA_URL"), "http://localhost:8761"), "")
	fs.StringVar(&c.user, "user", env("GOREKA_USER"), "")
	fs.StringVar(&c.password, "password", env("GOREKA_PASSWORD"), "")
	fs.StringVar(&c.output, "o", "table", "")
	fs.StringVar(&c.namespace, "namespace", env("GOREKA_NAMESPACE"), "")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "")
	fs.IntVar(&c.count, "n", 0, "")
	help := fs.Bool("help", false, "")
	fs.BoolVar(help, "h", false, "")

	// Flags may come anywhere: parse, take one positional, parse on.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			fmt.Fprintf(stderr, "goreka ctl: %v\n\n%s", err, usage)
			return ExitUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if *help {
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	if c.output != "table" && c.output != "json" {
		fmt.Fprintf(stderr, "goreka ctl: -o %q: table or json\n", c.output)
		return ExitUsage
	}
	if c.namespace != "" && c.namespace != apiclient.DefaultNamespace {
		if err := apiclient.ValidateNamespace(c.namespace); err != nil {
			fmt.Fprintf(stderr, "goreka ctl: -namespace: %v\n", err)
			return ExitUsage
		}
	}
	if len(pos) == 0 {
		fmt.Fprintf(stderr, "goreka ctl: a command is needed\n\n%s", usage)
		return ExitUsage
	}
	c.client = &http.Client{Timeout: c.timeout}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := c.dispatch(ctx, pos[0], pos[1:])
	if err == nil {
		return ExitOK
	}
	var ce *ctlError
	if !errors.As(err, &ce) {
		ce = &ctlError{ExitFailed, err.Error()}
	}
	if ce.msg != "" {
		fmt.Fprintf(stderr, "goreka ctl %s: %s\n", pos[0], ce.msg)
	}
	if ce.code == ExitUsage {
		fmt.Fprintf(stderr, "\n%s", usage)
	}
	return ce.code
}

func (c *ctl) dispatch(ctx context.Context, cmd string, args []string) error {
	nargs := func(n int, names string) error {
		if len(args) != n {
			return failf(ExitUsage, "needs %s, got %d argument(s)", names, len(args))
		}
		return nil
	}
	switch cmd {
	case "apps":
		if err := nargs(0, "no arguments"); err != nil {
			return err
		}
		return c.apps(ctx)
	case "instances":
		return c.instances(ctx, args)
	case "watch":
		return c.watch(ctx, args)
	case "override":
		if err := nargs(3, "APP ID STATUS"); err != nil {
			return err
		}
		st := strings.ToUpper(args[2])
		switch st {
		case "UP", "DOWN", "STARTING", "OUT_OF_SERVICE", "UNKNOWN":
		default:
			return failf(ExitUsage, "%q is not a status: UP, DOWN, STARTING, OUT_OF_SERVICE or UNKNOWN", args[2])
		}
		return c.write(args[0], args[1], "status override "+st+" set", func(cl *apiclient.Client) error {
			return cl.Override(ctx, args[0], args[1], registry.Status(st))
		})
	case "remove-override":
		if err := nargs(2, "APP ID"); err != nil {
			return err
		}
		return c.write(args[0], args[1], "status override removed", func(cl *apiclient.Client) error {
			return cl.RemoveOverride(ctx, args[0], args[1])
		})
	case "cancel":
		if err := nargs(2, "APP ID"); err != nil {
			return err
		}
		return c.write(args[0], args[1], "cancelled", func(cl *apiclient.Client) error {
			return cl.Cancel(ctx, args[0], args[1])
		})
	case "status":
		if err := nargs(0, "no arguments"); err != nil {
			return err
		}
		return c.status(ctx)
	case "diff":
		if err := nargs(2, "URL1 URL2"); err != nil {
			return err
		}
		return c.diff(ctx, args[0], args[1])
	case "xds":
		return c.xds(ctx, args)
	}
	return failf(ExitUsage, "unknown command")
}

// clientOf is the client of one server URL (see apiclient.New);
// credentials in the URL win over -user and -password.
func (c *ctl) clientOf(raw string) (*apiclient.Client, error) {
	cl, err := apiclient.New(raw, apiclient.WithNamespace(c.namespace),
		apiclient.WithCredentials(c.user, c.password), apiclient.WithHTTPClient(c.client))
	if err != nil {
		return nil, &ctlError{ExitUsage, err.Error()}
	}
	return cl, nil
}

// failure gives an error of the client its exit code and message.
func (c *ctl) failure(err error) error {
	var se *apiclient.StatusError
	var ue *apiclient.UnreachableError
	switch {
	case errors.As(err, &se):
		code, why := ExitFailed, se.Message
		switch se.StatusCode {
		case http.StatusUnauthorized:
			code, why = ExitUnreachable, cmp.Or(why, "credentials missing or wrong (use -user/-password or user:pass@ in the URL)")
		case http.StatusForbidden:
			code, why = ExitUnreachable, cmp.Or(why, "refused: this user may not do that, or the server is not open for reads yet")
		case http.StatusNotFound:
			why = cmp.Or(why, "not registered")
		}
		return failf(code, "%s %s: HTTP %d: %s", se.Method, se.URL, se.StatusCode, why)
	case errors.As(err, &ue) && ue.Timeout():
		return failf(ExitUnreachable, "%s: no answer within %s", ue.Server, c.timeout)
	case errors.As(err, &ue):
		return failf(ExitUnreachable, "%s unreachable: %v", ue.Server, ue.Err)
	}
	return err
}

func (c *ctl) json(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c *ctl) table(header string, rows [][]string) {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func (c *ctl) apps(ctx context.Context) error {
	cl, err := c.clientOf(c.server)
	if err != nil {
		return err
	}
	a, err := cl.Apps(ctx)
	if err != nil {
		return c.failure(err)
	}
	if c.output == "json" {
		return c.json(a)
	}
	var rows [][]string
	for _, ap := range a.Apps {
		var st []string
		for s, n := range ap.Statuses {
			st = append(st, fmt.Sprintf("%s=%d", s, n))
		}
		sort.Strings(st)
		rows = append(rows, []string{ap.Name, strconv.Itoa(ap.Instances), strings.Join(st, " ")})
	}
	c.table("APP\tINSTANCES\tSTATUSES", rows)
	fmt.Fprintf(c.stdout, "(revision %d)\n", a.Revision)
	return nil
}

// filterQuery turns KEY=VALUE arguments into the read API's query; the
// server checks the names and values (a 400 names the parameter).
func filterQuery(args []string, allowed ...string) (url.Values, error) {
	q := url.Values{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, failf(ExitUsage, "filter %q: KEY=VALUE expected", a)
		}
		if !strings.HasPrefix(k, "metadata.") && !slices.Contains(allowed, k) {
			return nil, failf(ExitUsage, "filter %q: unknown (known: %s, metadata.KEY)", a, strings.Join(allowed, ", "))
		}
		q.Add(k, v)
	}
	return q, nil
}

func (c *ctl) instances(ctx context.Context, args []string) error {
	cl, err := c.clientOf(c.server)
	if err != nil {
		return err
	}
	q, err := filterQuery(args, "app", "status", "vip", "svip", "lifecycle")
	if err != nil {
		return err
	}
	page, err := cl.Instances(ctx, q)
	if err != nil {
		return c.failure(err)
	}
	if c.output == "json" {
		return c.json(page)
	}
	var rows [][]string
	for _, in := range page.Instances {
		rows = append(rows, instanceRow(in))
	}
	c.table("APP\tID\tSTATUS\tLIFECYCLE\tADDRESS\tFLAGS", rows)
	fmt.Fprintf(c.stdout, "(%d instances, revision %d)\n", len(page.Instances), page.Revision)
	return nil
}

func instanceRow(in wire.Instance) []string {
	addr := in.HostName
	switch {
	case in.PortEnabled:
		addr += ":" + strconv.Itoa(in.Port)
	case in.SecurePortOn:
		addr += ":" + strconv.Itoa(in.SecurePort) + " (secure)"
	}
	var flags []string
	if in.Static {
		flags = append(flags, "static")
	}
	if in.OverriddenStatus != "" && in.OverriddenStatus != "UNKNOWN" {
		flags = append(flags, "override="+string(in.OverriddenStatus))
	}
	return []string{in.App, in.ID, string(in.Status), string(in.Lifecycle), addr, strings.Join(flags, ",")}
}

// write runs one of Eureka's operations on APP/ID and says it is done.
func (c *ctl) write(app, id, done string, op func(*apiclient.Client) error) error {
	cl, err := c.clientOf(c.server)
	if err != nil {
		return err
	}
	if err := op(cl); err != nil {
		return c.failure(err)
	}
	if c.output == "json" {
		return c.json(map[string]string{"app": strings.ToUpper(app), "id": id, "result": done})
	}
	fmt.Fprintf(c.stdout, "%s/%s: %s\n", strings.ToUpper(app), id, done)
	return nil
}

func (c *ctl) status(ctx context.Context) error {
	cl, err := c.clientOf(c.server)
	if err != nil {
		return err
	}
	st, err := cl.Status(ctx)
	if err != nil {
		return c.failure(err)
	}
	a, err := cl.Apps(ctx)
	if err != nil {
		return c.failure(err)
	}
	total := 0
	for _, ap := range a.Apps {
		total += ap.Instances
	}
	if c.output == "json" {
		return c.json(map[string]any{"server": cl.URL(), "generalStats": st.General, "applicationStats": st.Application,
			"revision": a.Revision, "apps": len(a.Apps), "instances": total})
	}
	rows := [][]string{{"server", cl.URL()}, {"revision", strconv.FormatInt(a.Revision, 10)},
		{"applications", strconv.Itoa(len(a.Apps))}, {"instances", strconv.Itoa(total)}}
	for _, m := range []map[string]string{st.General, st.Application} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			rows = append(rows, []string{k, m[k]})
		}
	}
	c.table("NAME\tVALUE", rows)
	return nil
}

// watch prints the changes of the watch stream; on a lagged event the
// client resumes from the revision it names, so nothing is skipped
// silently.
func (c *ctl) watch(ctx context.Context, args []string) error {
	cl, err := c.clientOf(c.server)
	if err != nil {
		return err
	}
	q, err := filterQuery(args, "since")
	if err != nil {
		return err
	}
	if len(q) > 1 || len(q["since"]) > 1 {
		return failf(ExitUsage, "watch takes only since=REV")
	}
	var since int64
	if s := q.Get("since"); s != "" {
		if since, err = strconv.ParseInt(s, 10, 64); err != nil || since < 0 {
			return failf(ExitFailed, "since: %q is not a revision (an integer >= 0)", s)
		}
	} else {
		// From now on: the changes after the current revision.
		a, err := cl.Apps(ctx)
		if err != nil {
			return c.failure(err)
		}
		since = a.Revision
	}
	seen := 0
	for ev, err := range cl.Watch(ctx, since) {
		if ev.Type != "" {
			c.printEvent(ev)
		}
		if ctx.Err() != nil {
			return nil
		}
		var se *apiclient.StreamError
		switch {
		case errors.As(err, &se):
			return &ctlError{ExitUnreachable, se.Error()}
		case err != nil:
			return c.failure(err)
		}
		if ev.Type == wire.EventChange {
			seen++
			if c.count > 0 && seen >= c.count {
				return nil
			}
		}
	}
	return nil
}

// printEvent prints one event: as the server sent it for -o json, one
// line per change, snapshot and lagged for tables.
func (c *ctl) printEvent(ev apiclient.Event) {
	if c.output == "json" {
		fmt.Fprintf(c.stdout, "{\"event\":%q,\"data\":%s}\n", ev.Type, ev.Data)
		return
	}
	switch {
	case ev.Change != nil:
		ch := ev.Change
		line := fmt.Sprintf("%d\t%s\t%s/%s\t%s", ch.Revision, ch.Kind, ch.App, ch.ID, ch.Instance.Status)
		if ch.PrevStatus != "" && ch.PrevStatus != ch.Instance.Status {
			line += " (was " + string(ch.PrevStatus) + ")"
		}
		if ch.FromPeer {
			line += " from a peer"
		}
		fmt.Fprintln(c.stdout, line)
	case ev.Snapshot != nil:
		fmt.Fprintf(c.stdout, "%d\tsnapshot\t%d instances\n", ev.Snapshot.Revision, len(ev.Snapshot.Instances))
	case ev.Lagged != nil:
		fmt.Fprintf(c.stdout, "%d\tlagged\tresuming\n", ev.Lagged.Revision)
	}
}

// DiffRow is one difference between two registries, as diff -o json
// prints it.
type DiffRow struct {
	Kind   string `json:"kind"` // missing (on the second), extra (on the second), status
	App    string `json:"app"`
	ID     string `json:"id"`
	First  string `json:"first,omitempty"`  // status on the first
	Second string `json:"second,omitempty"` // status on the second
}

func (c *ctl) diff(ctx context.Context, u1, u2 string) error {
	t1, err := c.clientOf(u1)
	if err != nil {
		return err
	}
	t2, err := c.clientOf(u2)
	if err != nil {
		return err
	}
	p1, err := t1.Instances(ctx, nil)
	if err != nil {
		return c.failure(err)
	}
	p2, err := t2.Instances(ctx, nil)
	if err != nil {
		return c.failure(err)
	}
	type key struct{ app, id string }
	second := map[key]wire.Instance{}
	for _, in := range p2.Instances {
		second[key{in.App, in.ID}] = in
	}
	var rows []DiffRow
	for _, in := range p1.Instances {
		k := key{in.App, in.ID}
		o, ok := second[k]
		delete(second, k)
		switch {
		case !ok:
			rows = append(rows, DiffRow{"missing", in.App, in.ID, string(in.Status), ""})
		case o.Status != in.Status:
			rows = append(rows, DiffRow{"status", in.App, in.ID, string(in.Status), string(o.Status)})
		}
	}
	for k, o := range second {
		rows = append(rows, DiffRow{"extra", k.app, k.id, "", string(o.Status)})
	}
	slices.SortFunc(rows, func(a, b DiffRow) int {
		return strings.Compare(a.App+"\x00"+a.ID, b.App+"\x00"+b.ID)
	})
	if c.output == "json" {
		if err := c.json(map[string]any{"first": t1.URL(), "second": t2.URL(), "firstRevision": p1.Revision,
			"secondRevision": p2.Revision, "differences": append([]DiffRow{}, rows...)}); err != nil {
			return err
		}
	} else {
		var tr [][]string
		for _, r := range rows {
			tr = append(tr, []string{r.Kind, r.App, r.ID, cmp.Or(r.First, "-"), cmp.Or(r.Second, "-")})
		}
		c.table("DIFF\tAPP\tID\t"+t1.URL()+"\t"+t2.URL(), tr)
		fmt.Fprintf(c.stdout, "(%d instances on %s, %d on %s, %d differences)\n",
			len(p1.Instances), t1.URL(), len(p2.Instances), t2.URL(), len(rows))
	}
	if len(rows) > 0 {
		return &ctlError{ExitFailed, ""}
	}
	return nil
}
