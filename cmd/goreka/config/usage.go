package config

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Usage describes every property goreka reads, with its default, for --help.
func Usage() string {
	var b strings.Builder
	b.WriteString(`Usage: goreka [--name=value ...]

Properties use Spring Boot's names and can be given as --name=value, as
environment variables (SERVER_PORT, EUREKA_SERVER_ENABLESELFPRESERVATION), in
SPRING_APPLICATION_JSON, or in application.yml / application.properties in
./ or ./config/ (see --spring.config.location, --spring.profiles.active).
Values may use ${name} and ${name:default}. Durations of goreka.* keys are in
Go form (5s, 1m); Eureka keys keep their units (ms, seconds).

`)
	group := ""
	for _, p := range properties {
		if g := groupOf(p.name); g != group {
			group = g
			fmt.Fprintf(&b, "%s\n", g)
		}
		def := p.def
		if p.dynamic != "" {
			def = "(" + p.dynamic + ")"
		} else if def == "" {
			def = `""`
		}
		fmt.Fprintf(&b, "  --%s=%s\n      %s\n", p.name, def, p.doc)
		if p.name == "goreka.security.read-only-password" {
			fmt.Fprintf(&b, "  --%s[N].name=... .password=... .roles=peer|admin .apps=APP,GLOB*\n      %s\n", UsersProperty,
				"Users that read everything and write (register, renew, cancel, override) only the apps they list; role peer may post replication batches (all apps unless listed), admin writes everything.")
		}
		if p.name == "eureka.client.fetch-registry" {
			for _, m := range mapProps {
				fmt.Fprintf(&b, "  --%s.<key>=...  default %s\n      %s\n", m.name, m.def, m.doc)
			}
		}
	}
	for _, lp := range listProps {
		fmt.Fprintf(&b, "\n--%s[N].<field>=...  (a list; YAML: a sequence of maps)\n      %s\n", lp.name, lp.doc)
		for _, f := range lp.fields {
			fmt.Fprintf(&b, "  %s[N].%s\n      %s\n", lp.name, strings.Replace(f.name, "*", "<key>", 1), f.doc)
		}
	}
	b.WriteString("\nKnown Spring Eureka properties that goreka accepts and ignores:\n")
	for _, ig := range ignored {
		fmt.Fprintf(&b, "  %s\n", ig.name)
	}
	return b.String()
}

func groupOf(name string) string {
	switch {
	case strings.HasPrefix(name, "goreka.tls."):
		return "Spring Boot:" // aliases listed beside server.ssl.*
	case strings.HasPrefix(name, "eureka.server."):
		return "\nEureka server (eureka.server.*):"
	case strings.HasPrefix(name, "eureka.instance."):
		return "\nThis server as an instance (eureka.instance.*):"
	case strings.HasPrefix(name, "eureka.client."):
		return "\nPeers (eureka.client.*):"
	case strings.HasPrefix(name, "eureka."):
		return "\nDashboard (eureka.*):"
	case strings.HasPrefix(name, "goreka."):
		return "\ngoreka (goreka.*):"
	}
	return "Spring Boot:"
}

// Render prints the effective configuration, one property a line with the
// source of its value; passwords are masked. It backs --goreka.print-config.
func (c *Config) Render() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	if len(c.Profiles) > 0 {
		fmt.Fprintf(tw, "# active profiles: %s\n", strings.Join(c.Profiles, ","))
	}
	line := func(name string, o origin, secret bool) {
		v := o.value
		if secret && v != "" {
			v = "******"
		}
		fmt.Fprintf(tw, "%s=%s\t# %s\n", name, v, o.source)
	}
	for _, p := range properties {
		o, ok := c.origin[p.name]
		if !ok {
			o = origin{value: "", source: "default"}
		}
		line(p.name, o, p.secret)
	}
	if o, ok := c.origin[UsersProperty]; ok {
		line(UsersProperty, o, false)
	}
	for _, m := range mapProps {
		for _, k := range sortedKeys(c.origin) {
			if strings.HasPrefix(k, m.name+".") {
				line(k, c.origin[k], false)
			}
		}
	}
	for _, lp := range listProps {
		for _, k := range sortedKeys(c.origin) {
			if strings.HasPrefix(k, lp.name+"[") {
				line(k, c.origin[k], false)
			}
		}
	}
	tw.Flush()
	return b.String()
}
