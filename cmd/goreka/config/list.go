package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goreka/goreka/registry"
)

// StaticInstance is one entry of goreka.static-instances, as configured;
// Instance is the registry instance it registers.
type StaticInstance struct {
	App, InstanceID, HostName, IPAddr          string
	Port, SecurePort                           int // 0: none
	Status                                     string
	VIPAddress, SecureVIPAddress               string
	HomePageURL, StatusPageURL, HealthCheckURL string
	Metadata                                   map[string]string
	Source                                     string // where the entry was written, for messages
}

// listItem is one record of a list property: its fields by canonical
// field name (a map field as "field.<key>").
type listItem struct {
	index  int
	fields map[string]string // canonical key under the record -> canonical full key
}

// listItems returns the records of the list property canon from the highest
// layer that has any of it, sorted by index. empty is true when that layer
// sets the list to nothing (YAML "name: []"). A missing index is an error.
func (s *stack) listItems(name, canon string) (items []listItem, found bool, err error) {
	for _, l := range s.layers {
		byIndex := map[int]*listItem{}
		var src string
		for c, e := range l.entries {
			if c == canon {
				found, src = true, e.source
				if strings.TrimSpace(e.value) != "" {
					return nil, true, fmt.Errorf("%s=%q (%s): a list of records is expected (%s[0].app=...)", e.key, e.value, e.source, name)
				}
				continue
			}
			rest, ok := strings.CutPrefix(c, canon+"[")
			if !ok {
				continue
			}
			found, src = true, e.source
			idx, field, ok := strings.Cut(rest, "]")
			n, err := strconv.Atoi(idx)
			if !ok || err != nil || n < 0 || !strings.HasPrefix(field, ".") || len(field) < 2 {
				return nil, true, fmt.Errorf("%s (%s): expected %s[N].field", e.key, e.source, name)
			}
			it := byIndex[n]
			if it == nil {
				it = &listItem{index: n, fields: map[string]string{}}
				byIndex[n] = it
			}
			it.fields[field[1:]] = c
		}
		if !found {
			continue
		}
		for _, it := range byIndex {
			items = append(items, *it)
		}
		slices.SortFunc(items, func(a, b listItem) int { return cmp.Compare(a.index, b.index) })
		for i, it := range items {
			if it.index != i {
				return nil, true, fmt.Errorf("%s[%d] (%s): missing (entries are numbered from 0 without gaps)", name, i, src)
			}
		}
		return items, true, nil
	}
	return nil, false, nil
}

// bindStatic reads goreka.static-instances: every field is checked, and
// every problem names the entry and the field.
func bindStatic(st *stack, c *Config, errs *[]error) {
	lp := listProps[0]
	canon := lp.canon()
	items, found, err := st.listItems(lp.name, canon)
	if err != nil {
		*errs = append(*errs, err)
		return
	}
	if !found {
		return
	}
	c.set[canon] = "list"
	for _, it := range items {
		prefix := fmt.Sprintf("%s[%d]", lp.name, it.index)
		s := StaticInstance{}
		ok := true
		for _, fk := range sortedKeys(it.fields) {
			full := it.fields[fk]
			e, _, err := st.resolved(full)
			if err != nil {
				*errs = append(*errs, err)
				ok = false
				continue
			}
			s.Source = e.source
			f, key, known := staticField(lp, fk)
			if !known {
				*errs = append(*errs, fmt.Errorf("%s (%s): unknown field %q of %s (known: %s)", e.key, e.source, fk, prefix, fieldNames(lp)))
				ok = false
				continue
			}
			if err := f.set(&s, key, e.value); err != nil {
				*errs = append(*errs, fmt.Errorf("%s=%q (%s): %w", e.key, e.value, e.source, err))
				ok = false
				continue
			}
			c.origin[prefix+"."+fk] = origin{value: e.value, source: e.source}
		}
		if !ok {
			continue
		}
		if err := completeStatic(&s); err != nil {
			*errs = append(*errs, fmt.Errorf("%s (%s): %w", prefix, s.Source, err))
			continue
		}
		c.Goreka.StaticInstances = append(c.Goreka.StaticInstances, s)
	}
	seen := map[string]int{}
	for i, s := range c.Goreka.StaticInstances {
		k := strings.ToUpper(s.App) + "/" + s.InstanceID
		if j, dup := seen[k]; dup {
			*errs = append(*errs, fmt.Errorf("%s[%d] (%s): the same app and instance-id as %s[%d] (%s)", lp.name, i, s.Source, lp.name, j, k))
		}
		seen[k] = i
	}
}

// staticField finds the field a canonical record key names; for a map
// field it also returns the map key.
func staticField(lp listProp, fk string) (recordField, string, bool) {
	for _, f := range lp.fields {
		if m, ok := strings.CutSuffix(f.name, ".*"); ok {
			if k, ok := strings.CutPrefix(fk, canonicalSegment(m)+"."); ok && k != "" {
				return f, k, true
			}
			continue
		}
		if fk == canonicalSegment(f.name) {
			return f, "", true
		}
	}
	return recordField{}, "", false
}

func fieldNames(lp listProp) string {
	var n []string
	for _, f := range lp.fields {
		n = append(n, f.name)
	}
	return strings.Join(n, ", ")
}

// completeStatic checks what spans fields and fills the defaults.
func completeStatic(s *StaticInstance) error {
	if s.App == "" {
		return errors.New("app is required")
	}
	if s.HostName == "" && s.IPAddr == "" {
		return errors.New("host-name or ip-addr is required")
	}
	if s.HostName == "" {
		s.HostName = s.IPAddr
	}
	if s.IPAddr == "" {
		s.IPAddr = s.HostName
	}
	if s.InstanceID == "" {
		s.InstanceID = s.HostName + ":" + strings.ToLower(s.App)
		if s.Port > 0 {
			s.InstanceID += ":" + strconv.Itoa(s.Port)
		}
	}
	if s.Status == "" {
		s.Status = "UP"
	}
	if s.VIPAddress == "" {
		s.VIPAddress = strings.ToLower(s.App)
	}
	if s.SecureVIPAddress == "" {
		s.SecureVIPAddress = strings.ToLower(s.App)
	}
	return nil
}

// Instance is the registration s stands for: app upper-cased as Eureka
// stores it, data center MyOwn, a port enabled when it is set.
func (s StaticInstance) Instance() *registry.Instance {
	in := &registry.Instance{
		InstanceID: s.InstanceID, App: strings.ToUpper(s.App), HostName: s.HostName, IPAddr: s.IPAddr,
		Status: registry.Status(s.Status), VIPAddress: s.VIPAddress, SecureVIPAddress: s.SecureVIPAddress,
		HomePageURL: s.HomePageURL, StatusPageURL: s.StatusPageURL, HealthCheckURL: s.HealthCheckURL,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		Metadata:       s.Metadata,
		Port:           registry.Port{Number: s.Port, Enabled: s.Port > 0},
		SecurePort:     registry.Port{Number: s.SecurePort, Enabled: s.SecurePort > 0},
	}
	if in.Metadata == nil {
		in.Metadata = map[string]string{}
	}
	return in
}
