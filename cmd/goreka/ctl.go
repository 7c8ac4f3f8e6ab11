package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
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

	"github.com/goreka/goreka/server"
	"github.com/goreka/goreka/server/api"
)

// goreka ctl: a command-line client of a running goreka (its read API and
// Eureka's REST operations). Exit codes, as ctlUsage says: 0 ok, 1 the
// operation failed or diff found differences, 2 usage, 3 the server is
// unreachable or refused the credentials.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnreachable = 3
)

const ctlUsage = `Usage: goreka ctl [flags] COMMAND [ARGS]

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

// runCtl is goreka ctl: it returns the exit code.
func runCtl(args, environ []string, stdout, stderr io.Writer) int {
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
			fmt.Fprintf(stderr, "goreka ctl: %v\n\n%s", err, ctlUsage)
			return exitUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if *help {
		fmt.Fprint(stdout, ctlUsage)
		return exitOK
	}
	if c.output != "table" && c.output != "json" {
		fmt.Fprintf(stderr, "goreka ctl: -o %q: table or json\n", c.output)
		return exitUsage
	}
	if c.namespace != "" && c.namespace != defaultNamespace {
		if err := server.ValidateNamespace(c.namespace); err != nil {
			fmt.Fprintf(stderr, "goreka ctl: -namespace: %v\n", err)
			return exitUsage
		}
	}
	if len(pos) == 0 {
		fmt.Fprintf(stderr, "goreka ctl: a command is needed\n\n%s", ctlUsage)
		return exitUsage
	}
	c.client = &http.Client{Timeout: c.timeout}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := c.dispatch(ctx, pos[0], pos[1:])
	if err == nil {
		return exitOK
	}
	var ce *ctlError
	if !errors.As(err, &ce) {
		ce = &ctlError{exitFailed, err.Error()}
	}
	if ce.msg != "" {
		fmt.Fprintf(stderr, "goreka ctl %s: %s\n", pos[0], ce.msg)
	}
	if ce.code == exitUsage {
		fmt.Fprintf(stderr, "\n%s", ctlUsage)
	}
	return ce.code
}

func (c *ctl) dispatch(ctx context.Context, cmd string, args []string) error {
	nargs := func(n int, names string) error {
		if len(args) != n {
			return failf(exitUsage, "needs %s, got %d argument(s)", names, len(args))
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
			return failf(exitUsage, "%q is not a status: UP, DOWN, STARTING, OUT_OF_SERVICE or UNKNOWN", args[2])
		}
		return c.write(ctx, "PUT", args[0], args[1], "/status?value="+st, "status override "+st+" set")
	case "remove-override":
		if err := nargs(2, "APP ID"); err != nil {
			return err
		}
		return c.write(ctx, "DELETE", args[0], args[1], "/status", "status override removed")
	case "cancel":
		if err := nargs(2, "APP ID"); err != nil {
			return err
		}
		return c.write(ctx, "DELETE", args[0], args[1], "", "cancelled")
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
	}
	return failf(exitUsage, "unknown command")
}

// target is one server: its base URL (without /eureka) and credentials.
type target struct {
	base       string
	user, pass string
	shown      string // the URL without credentials, for messages
}

// targetOf parses a server URL: http(s)://[user:pass@]host:port[/eureka[/]];
// credentials in the URL win over -user and -password.
func (c *ctl) targetOf(raw string) (target, error) {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return target{}, failf(exitUsage, "server %q: not an http(s) URL", raw)
	}
	t := target{user: c.user, pass: c.password}
	if u.User != nil {
		t.user = u.User.Username()
		t.pass, _ = u.User.Password()
		u.User = nil
	}
	p := strings.TrimSuffix(u.Path, "/")
	p = strings.TrimSuffix(p, "/eureka")
	if c.namespace != "" && c.namespace != defaultNamespace {
		// Every path of a namespace is under /ns/{name}/ (server.NamespacePrefix).
		p = strings.TrimSuffix(p, "/") + server.NamespacePrefix + c.namespace
	}
	u.Path, u.RawQuery, u.Fragment = p, "", ""
	t.base = strings.TrimSuffix(u.String(), "/")
	t.shown = t.base
	return t, nil
}

// do sends one request and returns the body of a 2xx answer; other answers
// become errors with their exit code.
func (c *ctl) do(ctx context.Context, t target, method, path string, client *http.Client) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, nil)
	if err != nil {
		return nil, failf(exitUsage, "%v", err)
	}
	req.Header.Set("Accept", "application/json")
	if t.user != "" {
		req.SetBasicAuth(t.user, t.pass)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, failf(exitUnreachable, "%s: no answer within %s", t.shown, c.timeout)
		}
		return nil, failf(exitUnreachable, "%s unreachable: %v", t.shown, errors.Unwrap(err))
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	why := strings.TrimSpace(string(b))
	var ea api.ErrorAnswer
	if json.Unmarshal(b, &ea) == nil && ea.Error != "" {
		why = ea.Error
	}
	code := exitFailed
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		code, why = exitUnreachable, cmp.Or(why, "credentials missing or wrong (use -user/-password or user:pass@ in the URL)")
	case http.StatusForbidden:
		code, why = exitUnreachable, cmp.Or(why, "refused: this user may not do that, or the server is not open for reads yet")
	case http.StatusNotFound:
		why = cmp.Or(why, "not registered")
	}
	return nil, failf(code, "%s %s: HTTP %d: %s", method, t.shown+path, resp.StatusCode, why)
}

func (c *ctl) getJSON(ctx context.Context, t target, path string, v any) error {
	resp, err := c.do(ctx, t, "GET", path, c.client)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return failf(exitFailed, "GET %s: not the answer of a goreka: %v", t.shown+path, err)
	}
	return nil
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
	t, err := c.targetOf(c.server)
	if err != nil {
		return err
	}
	var a api.AppsAnswer
	if err := c.getJSON(ctx, t, api.Prefix+"/apps", &a); err != nil {
		return err
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
			return nil, failf(exitUsage, "filter %q: KEY=VALUE expected", a)
		}
		if !strings.HasPrefix(k, "metadata.") && !slices.Contains(allowed, k) {
			return nil, failf(exitUsage, "filter %q: unknown (known: %s, metadata.KEY)", a, strings.Join(allowed, ", "))
		}
		q.Add(k, v)
	}
	return q, nil
}

// allInstances reads every page of /instances.
func (c *ctl) allInstances(ctx context.Context, t target, q url.Values) (api.InstancesPage, error) {
	q = cloneQuery(q)
	var all api.InstancesPage
	all.Instances = []api.Instance{}
	for {
		var p api.InstancesPage
		if err := c.getJSON(ctx, t, api.Prefix+"/instances?"+q.Encode(), &p); err != nil {
			return all, err
		}
		all.Revision = p.Revision
		all.Instances = append(all.Instances, p.Instances...)
		if p.Continue == "" {
			return all, nil
		}
		q.Set("continue", p.Continue)
	}
}

func cloneQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	return out
}

func (c *ctl) instances(ctx context.Context, args []string) error {
	t, err := c.targetOf(c.server)
	if err != nil {
		return err
	}
	q, err := filterQuery(args, "app", "status", "vip", "svip", "lifecycle")
	if err != nil {
		return err
	}
	page, err := c.allInstances(ctx, t, q)
	if err != nil {
		return err
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

func instanceRow(in api.Instance) []string {
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

func (c *ctl) write(ctx context.Context, method, app, id, suffix, done string) error {
	t, err := c.targetOf(c.server)
	if err != nil {
		return err
	}
	path := "/eureka/apps/" + url.PathEscape(strings.ToUpper(app)) + "/" + url.PathEscape(id) + suffix
	resp, err := c.do(ctx, t, method, path, c.client)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if c.output == "json" {
		return c.json(map[string]string{"app": strings.ToUpper(app), "id": id, "result": done})
	}
	fmt.Fprintf(c.stdout, "%s/%s: %s\n", strings.ToUpper(app), id, done)
	return nil
}

func (c *ctl) status(ctx context.Context) error {
	t, err := c.targetOf(c.server)
	if err != nil {
		return err
	}
	var st struct {
		General     map[string]string `json:"generalStats"`
		Application map[string]string `json:"applicationStats"`
	}
	if err := c.getJSON(ctx, t, "/eureka/status", &st); err != nil {
		return err
	}
	var a api.AppsAnswer
	if err := c.getJSON(ctx, t, api.Prefix+"/apps", &a); err != nil {
		return err
	}
	total := 0
	for _, ap := range a.Apps {
		total += ap.Instances
	}
	if c.output == "json" {
		return c.json(map[string]any{"server": t.shown, "generalStats": st.General, "applicationStats": st.Application,
			"revision": a.Revision, "apps": len(a.Apps), "instances": total})
	}
	rows := [][]string{{"server", t.shown}, {"revision", strconv.FormatInt(a.Revision, 10)},
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

// watch prints the changes of the watch stream; on a lagged event it
// resumes from the revision it names, so nothing is skipped silently.
func (c *ctl) watch(ctx context.Context, args []string) error {
	t, err := c.targetOf(c.server)
	if err != nil {
		return err
	}
	q, err := filterQuery(args, "since")
	if err != nil {
		return err
	}
	if len(q) > 1 || len(q["since"]) > 1 {
		return failf(exitUsage, "watch takes only since=REV")
	}
	since := q.Get("since")
	if since == "" {
		// From now on: the changes after the current revision.
		var a api.AppsAnswer
		if err := c.getJSON(ctx, t, api.Prefix+"/apps", &a); err != nil {
			return err
		}
		since = strconv.FormatInt(a.Revision, 10)
	}
	stream := &http.Client{} // no timeout: the stream lasts
	seen := 0
	for {
		resp, err := c.do(ctx, t, "GET", api.Prefix+"/watch?since="+url.QueryEscape(since), stream)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		next, done, err := c.readEvents(resp.Body, &seen)
		resp.Body.Close()
		if ctx.Err() != nil || done {
			return nil
		}
		if err != nil {
			return failf(exitUnreachable, "watch %s: %v", t.shown, err)
		}
		if next == "" {
			return failf(exitUnreachable, "watch %s: the server ended the stream", t.shown)
		}
		since = next
	}
}

// readEvents prints the events of one watch connection. It returns the
// revision to resume from after a lagged event, or done once -n changes
// were printed.
func (c *ctl) readEvents(body io.Reader, seen *int) (resume string, done bool, err error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data += line[len("data: "):]
		case line == "":
			if event != "" {
				r, err := c.printEvent(event, data)
				if err != nil {
					return "", false, err
				}
				if event == "change" {
					*seen++
					if c.count > 0 && *seen >= c.count {
						return "", true, nil
					}
				}
				if event == "lagged" {
					return r, false, nil
				}
			}
			event, data = "", ""
		}
	}
	return "", false, sc.Err()
}

func (c *ctl) printEvent(event, data string) (string, error) {
	if c.output == "json" {
		fmt.Fprintf(c.stdout, "{\"event\":%q,\"data\":%s}\n", event, data)
	}
	switch event {
	case "change":
		var ch api.Change
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return "", fmt.Errorf("bad change event: %v", err)
		}
		if c.output == "table" {
			line := fmt.Sprintf("%d\t%s\t%s/%s\t%s", ch.Revision, ch.Kind, ch.App, ch.ID, ch.Instance.Status)
			if ch.PrevStatus != "" && ch.PrevStatus != ch.Instance.Status {
				line += " (was " + string(ch.PrevStatus) + ")"
			}
			if ch.FromPeer {
				line += " from a peer"
			}
			fmt.Fprintln(c.stdout, line)
		}
	case "snapshot":
		var s api.Snapshot
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			return "", fmt.Errorf("bad snapshot event: %v", err)
		}
		if c.output == "table" {
			fmt.Fprintf(c.stdout, "%d\tsnapshot\t%d instances\n", s.Revision, len(s.Instances))
		}
	case "lagged":
		var l api.Lagged
		if err := json.Unmarshal([]byte(data), &l); err != nil {
			return "", fmt.Errorf("bad lagged event: %v", err)
		}
		if c.output == "table" {
			fmt.Fprintf(c.stdout, "%d\tlagged\tresuming\n", l.Revision)
		}
		return strconv.FormatInt(l.Revision, 10), nil
	}
	return "", nil
}

// diffRow is one difference between two registries.
type diffRow struct {
	Kind   string `json:"kind"` // missing (on the second), extra (on the second), status
	App    string `json:"app"`
	ID     string `json:"id"`
	First  string `json:"first,omitempty"`  // status on the first
	Second string `json:"second,omitempty"` // status on the second
}

func (c *ctl) diff(ctx context.Context, u1, u2 string) error {
	t1, err := c.targetOf(u1)
	if err != nil {
		return err
	}
	t2, err := c.targetOf(u2)
	if err != nil {
		return err
	}
	p1, err := c.allInstances(ctx, t1, nil)
	if err != nil {
		return err
	}
	p2, err := c.allInstances(ctx, t2, nil)
	if err != nil {
		return err
	}
	type key struct{ app, id string }
	second := map[key]api.Instance{}
	for _, in := range p2.Instances {
		second[key{in.App, in.ID}] = in
	}
	var rows []diffRow
	for _, in := range p1.Instances {
		k := key{in.App, in.ID}
		o, ok := second[k]
		delete(second, k)
		switch {
		case !ok:
			rows = append(rows, diffRow{"missing", in.App, in.ID, string(in.Status), ""})
		case o.Status != in.Status:
			rows = append(rows, diffRow{"status", in.App, in.ID, string(in.Status), string(o.Status)})
		}
	}
	for k, o := range second {
		rows = append(rows, diffRow{"extra", k.app, k.id, "", string(o.Status)})
	}
	slices.SortFunc(rows, func(a, b diffRow) int {
		return strings.Compare(a.App+"\x00"+a.ID, b.App+"\x00"+b.ID)
	})
	if c.output == "json" {
		if err := c.json(map[string]any{"first": t1.shown, "second": t2.shown, "firstRevision": p1.Revision,
			"secondRevision": p2.Revision, "differences": append([]diffRow{}, rows...)}); err != nil {
			return err
		}
	} else {
		var tr [][]string
		for _, r := range rows {
			tr = append(tr, []string{r.Kind, r.App, r.ID, cmp.Or(r.First, "-"), cmp.Or(r.Second, "-")})
		}
		c.table("DIFF\tAPP\tID\t"+t1.shown+"\t"+t2.shown, tr)
		fmt.Fprintf(c.stdout, "(%d instances on %s, %d on %s, %d differences)\n",
			len(p1.Instances), t1.shown, len(p2.Instances), t2.shown, len(rows))
	}
	if len(rows) > 0 {
		return &ctlError{exitFailed, ""}
	}
	return nil
}
