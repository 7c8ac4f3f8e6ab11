package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goreka/goreka/registry"
)

// host supplies the machine facts behind dynamic defaults; tests replace it.
type host struct {
	hostname func() (string, error)
	ipv4     func() string
}

var systemHost = host{hostname: os.Hostname, ipv4: firstIPv4}

// firstIPv4 returns the first non-loopback IPv4 address of an up interface,
// else 127.0.0.1.
func firstIPv4() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "127.0.0.1"
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip4 := ipn.IP.To4(); ip4 != nil && !ip4.IsLoopback() && !ip4.IsLinkLocalUnicast() {
					return ip4.String()
				}
			}
		}
	}
	return "127.0.0.1"
}

// Load builds the configuration from command-line arguments (without the
// program name), the environment ("KEY=value" entries, as os.Environ) and the
// config files found relative to workDir. It returns every problem at once,
// joined with errors.Join; each names the key, the value and the source, e.g.
//
//	eureka.server.renewal-percent-threshold="abc" (command line): not a number
//
// Problems that do not stop the server are in Config.Warnings.
func Load(args []string, environ []string, workDir string) (*Config, error) {
	return load(args, environ, workDir, systemHost)
}

func load(args, environ []string, workDir string, h host) (*Config, error) {
	if workDir == "" {
		workDir = "."
	}
	if abs, err := filepath.Abs(workDir); err == nil {
		workDir = abs
	}
	var errs []error
	var warns []string

	cli, w, err := commandLine(args)
	warns = append(warns, w...)
	errs = append(errs, err)
	envDoc, envMap := environment(environ)

	cliLayer, envLayer := newLayer(cli), newLayer(envDoc)
	initial := []*layer{cliLayer}
	jsonText, jsonSource := "", ""
	if e, ok := cliLayer.entries["spring.application.json"]; ok {
		jsonText, jsonSource = e.value, "--spring.application.json"
	} else if v, ok := envMap["SPRING_APPLICATION_JSON"]; ok {
		jsonText, jsonSource = v, "SPRING_APPLICATION_JSON"
	}
	if strings.TrimSpace(jsonText) != "" {
		jd, err := parseJSON(jsonSource, jsonText)
		if err != nil {
			errs = append(errs, err)
		} else {
			initial = append(initial, newLayer(jd))
		}
	}
	initial = append(initial, envLayer)

	// Where the files are: read from the sources above the files only, as
	// Spring does.
	st := &stack{layers: initial, environ: envMap}
	get := func(key string) string {
		e, ok, err := st.resolved(canonicalKey(key))
		if err != nil {
			errs = append(errs, err)
			return ""
		}
		if !ok {
			return ""
		}
		return e.value
	}
	names := splitList(get("spring.config.name"))
	if len(names) == 0 {
		names = []string{"application"}
	}
	var locs []location
	if l := get("spring.config.location"); l != "" {
		ls, w, err := parseLocations(l, workDir)
		locs, warns, errs = ls, append(warns, w...), append(errs, err)
	} else {
		locs = []location{
			{path: workDir, shown: "./", optional: true, dir: true},
			{path: filepath.Join(workDir, "config"), shown: "./config/", optional: true, dir: true},
		}
	}
	if l := get("spring.config.additional-location"); l != "" {
		ls, w, err := parseLocations(l, workDir)
		locs, warns, errs = append(locs, ls...), append(warns, w...), append(errs, err)
	}

	var base []*document
	for _, l := range locs {
		ds, err := loadLocation(l, names, "", workDir)
		errs = append(errs, err)
		base = append(base, ds...)
	}

	// Active profiles: from the sources above the files, else from the
	// unconditional file documents (the last one wins).
	st.layers = slices.Clone(initial)
	for i := len(base) - 1; i >= 0; i-- {
		if !base[i].hasProfile {
			st.layers = append(st.layers, newLayer(base[i]))
		}
	}
	active := splitList(get("spring.profiles.active"))
	effective := active
	if len(effective) == 0 {
		effective = splitList(get("spring.profiles.default"))
		if len(effective) == 0 {
			effective = []string{"default"}
		}
	}

	var profiled []*document
	for _, l := range locs {
		for _, p := range effective {
			ds, err := loadLocation(l, names, p, workDir)
			errs = append(errs, err)
			profiled = append(profiled, ds...)
		}
	}

	var docs []*document
	for _, d := range append(base, profiled...) {
		if d.hasProfile {
			ok, err := matchProfiles(d.onProfile, effective)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: spring.config.activate.on-profile: %w", d.source, err))
				continue
			}
			if !ok {
				continue
			}
		}
		docs = append(docs, d)
	}
	st.layers = slices.Clone(initial)
	for i := len(docs) - 1; i >= 0; i-- {
		st.layers = append(st.layers, newLayer(docs[i]))
	}

	c := bind(st, &errs, &warns)
	c.Profiles = active
	finish(c, workDir, h, &errs)
	bindUsers(st, c, &errs) // after finish: the default user name is known
	checkCertificateUsers(c, &errs)
	warns = append(warns, unknownKeys(st)...)
	c.Warnings = dedupe(warns)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// bind applies defaults, then every value a source set.
func bind(st *stack, errs *[]error, warns *[]string) *Config {
	c := &Config{set: map[string]string{}, origin: map[string]origin{}}
	for _, p := range properties {
		if p.dynamic != "" && p.def == "" {
			continue
		}
		if err := p.set(c, p.def); err != nil {
			*errs = append(*errs, fmt.Errorf("%s: bad built-in default %q: %w", p.name, p.def, err)) // a bug in the table
		}
		c.origin[p.name] = origin{value: p.def, source: "default"}
	}
	for _, p := range properties {
		canon := canonicalKey(p.name)
		e, ok, err := st.resolved(canon)
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		if !ok {
			continue
		}
		c.set[canon] = e.source
		if err := p.set(c, e.value); err != nil {
			*errs = append(*errs, fmt.Errorf("%s=%q (%s): %w", e.key, e.value, e.source, err))
			continue
		}
		c.origin[p.name] = origin{value: e.value, source: e.source}
	}

	// Map properties. Spring's EurekaClientConfigBean starts serviceUrl with
	// defaultZone=http://localhost:8761/eureka/ and binds over it.
	c.Client.ServiceURL = map[string][]string{defaultZone: {"http://localhost:8761/eureka/"}}
	c.origin["eureka.client.service-url."+defaultZone] = origin{value: "http://localhost:8761/eureka/", source: "default"}
	c.Client.AvailabilityZones = map[string][]string{}
	c.Instance.Metadata = map[string]string{}
	eachMapEntry(st, c, "eureka.client.service-url", errs, func(k string, e entry) error {
		var urls []string
		for _, u := range splitList(e.value) {
			if err := checkURL(u); err != nil {
				return err
			}
			if !strings.HasSuffix(u, "/") {
				u += "/"
			}
			urls = append(urls, u)
		}
		c.Client.ServiceURL[k] = urls
		if k == defaultZone && !strings.HasPrefix(e.source, "environment variable") {
			segs := splitKey(e.key)
			if last := strings.Trim(segs[len(segs)-1], "[]"); last != defaultZone && !isIndex(last) {
				*warns = append(*warns, fmt.Sprintf("%s (%s): goreka reads this as defaultZone, but stock Spring Eureka servers and clients need the key spelled defaultZone", e.key, e.source))
			}
		}
		return nil
	})
	eachMapEntry(st, c, "eureka.client.availability-zones", errs, func(k string, e entry) error {
		c.Client.AvailabilityZones[k] = splitList(e.value)
		return nil
	})
	eachMapEntry(st, c, "eureka.instance.metadata-map", errs, func(k string, e entry) error {
		c.Instance.Metadata[k] = e.value
		return nil
	})
	c.EurekaServer.RemoteRegions.URLsWithName = map[string]string{}
	c.EurekaServer.RemoteRegions.AppWhitelist = map[string][]string{}
	eachMapEntry(st, c, "eureka.server.remote-region-urls-with-name", errs, func(k string, e entry) error {
		if err := checkURL(e.value); err != nil {
			return err
		}
		u := e.value
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		c.EurekaServer.RemoteRegions.URLsWithName[strings.ToLower(k)] = u
		return nil
	})
	eachMapEntry(st, c, "eureka.server.remote-region-app-whitelist", errs, func(k string, e entry) error {
		c.EurekaServer.RemoteRegions.AppWhitelist[strings.ToLower(k)] = splitList(e.value)
		return nil
	})
	bindStatic(st, c, errs)
	bindBundles(st, c, errs)
	return c
}

// eachMapEntry resolves every key of a map property and hands it to f.
func eachMapEntry(st *stack, c *Config, name string, errs *[]error, f func(k string, e entry) error) {
	prefix := canonicalKey(name)
	for _, k := range st.mapKeys(prefix) {
		canon := prefix + "." + k
		e, ok, err := st.resolved(canon)
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		if !ok {
			continue
		}
		if err := f(k, e); err != nil {
			*errs = append(*errs, fmt.Errorf("%s=%q (%s): %w", e.key, e.value, e.source, err))
			continue
		}
		c.set[canon] = e.source
		c.origin[name+"."+k] = origin{value: e.value, source: e.source}
	}
}

// finish computes the dynamic defaults and checks rules that span keys.
func finish(c *Config, workDir string, h host, errs *[]error) {
	derived := func(name, value, why string) {
		c.origin[name] = origin{value: value, source: "default: " + why}
	}
	if c.Instance.Hostname == "" {
		name, err := h.hostname()
		if err != nil || name == "" {
			name = "localhost"
		}
		c.Instance.Hostname = name
		derived("eureka.instance.hostname", name, "OS host name")
	}
	if c.Instance.IPAddress == "" {
		c.Instance.IPAddress = h.ipv4()
		derived("eureka.instance.ip-address", c.Instance.IPAddress, "first non-loopback IPv4")
	}
	if c.Instance.InstanceID == "" {
		c.Instance.InstanceID = c.Instance.Hostname + ":" + c.AppName + ":" + strconv.Itoa(c.Server.Port)
		derived("eureka.instance.instance-id", c.Instance.InstanceID, "hostname:app:port")
	}
	if !c.IsSet("eureka.server.registry-sync-retries") {
		if c.Client.RegisterWithEureka {
			c.EurekaServer.RegistrySyncRetries = 1
		}
		derived("eureka.server.registry-sync-retries", strconv.Itoa(c.EurekaServer.RegistrySyncRetries), "register-with-eureka")
	}
	if !c.IsSet("logging.level.goreka") {
		c.Logging.Goreka = c.Logging.Root
		derived("logging.level.goreka", c.origin["logging.level.root"].value, "logging.level.root")
	}
	if c.Security.Password != "" && c.Security.User == "" {
		c.Security.User = "user" // Spring Boot's default user name
		derived("spring.security.user.name", "user", "Spring Boot's default")
	}
	if c.Security.User != "" && c.Security.Password == "" {
		*errs = append(*errs, fmt.Errorf("spring.security.user.name=%q (%s): spring.security.user.password is not set; goreka does not generate one", c.Security.User, c.set[canonicalKey("spring.security.user.name")]))
	}
	finishTLS(c, workDir, errs)
	if !c.IsSet("goreka.xds.address") {
		c.Goreka.XDS.Address = c.Server.Address
		derived("goreka.xds.address", c.Server.Address, "server.address")
	}
	if c.Goreka.Peers.Port == 0 {
		c.Goreka.Peers.Port = c.Server.Port
		derived("goreka.peers.port", strconv.Itoa(c.Server.Port), "server.port")
	}
	if c.Client.EurekaServerPort == 0 {
		c.Client.EurekaServerPort = c.Server.Port
		derived("eureka.client.eureka-server-port", strconv.Itoa(c.Server.Port), "server.port")
	}
	if rc := c.Goreka.Relay; len(rc.Upstream) == 0 && (rc.ReadOnly || len(rc.FetchApps) > 0) {
		*errs = append(*errs, errors.New("goreka.relay.read-only and goreka.relay.fetch-apps need goreka.relay.upstream"))
	}
	if c.Client.UseDNSForFetchingServiceURLs && c.Client.EurekaServerDNSName == "" {
		*errs = append(*errs, errors.New("eureka.client.use-dns-for-fetching-service-urls=true needs eureka.client.eureka-server-d-n-s-name"))
	}
	if c.EurekaServer.ExpectedClientRenewalInterval == 0 {
		c.EurekaServer.ExpectedClientRenewalInterval = registry.DefaultRenewalInterval // Netflix: <= 0 means the clients' default, 30 s
	}
}

// unknownKeys warns about eureka.* and goreka.* keys goreka does not know,
// and more softly about known Eureka keys it ignores. Keys of other Spring
// subsystems are not goreka's business and pass silently.
func unknownKeys(st *stack) []string {
	known := map[string]bool{}
	for _, p := range properties {
		known[canonicalKey(p.name)] = true
	}
	for _, p := range listProps {
		known[canonicalKey(p.name)] = true // its records are checked by bindStatic
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range st.layers {
		for _, canon := range sortedKeys(l.entries) {
			if seen[canon] {
				continue
			}
			seen[canon] = true
			e := l.entries[canon]
			base := canon
			if i := strings.IndexByte(base, '['); i > 0 {
				base = base[:i]
			}
			if base == "spring.config.import" {
				out = append(out, fmt.Sprintf("%s (%s): spring.config.import is not supported by goreka; list the files in spring.config.additional-location", e.key, e.source))
				continue
			}
			// server.ssl too: a misspelt TLS property (client-auth) would
			// otherwise go unnoticed.
			if !strings.HasPrefix(base, "eureka.") && !strings.HasPrefix(base, "goreka.") && !strings.HasPrefix(base, "server.ssl.") {
				continue
			}
			if known[base] || inMap(base) || isMapPrefix(base) || base == UsersProperty {
				continue
			}
			if ig, ok := findIgnored(base); ok {
				kind := "Spring Eureka"
				if strings.HasPrefix(base, "server.") {
					kind = "Spring Boot"
				}
				msg := fmt.Sprintf("%s (%s): a %s property that goreka ignores", e.key, e.source, kind)
				if ig.note != "" {
					msg += "; " + ig.note
				}
				out = append(out, msg)
				continue
			}
			msg := fmt.Sprintf("%s (%s): unknown property", e.key, e.source)
			if s := suggest(base, e.key); s != "" {
				msg += fmt.Sprintf("; did you mean %s?", s)
			}
			out = append(out, msg)
		}
	}
	return out
}

func inMap(canon string) bool {
	for _, p := range mapProperties {
		if strings.HasPrefix(canon, p+".") {
			return true
		}
	}
	return false
}

func findIgnored(canon string) (ignoredProp, bool) {
	for _, ig := range ignored {
		if prefix, ok := strings.CutSuffix(ig.name, ".*"); ok {
			p := canonicalKey(prefix)
			if canon == p || strings.HasPrefix(canon, p+".") {
				return ig, true
			}
			continue
		}
		c := canonicalKey(ig.name)
		if canon == c || strings.HasPrefix(canon, c+".") {
			return ig, true
		}
	}
	return ignoredProp{}, false
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
