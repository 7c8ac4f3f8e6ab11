package compat

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/goreka/goreka/registry"
)

var errNotScalar = errors.New("expected a string, number, boolean or null")

// UnmarshalJSON accepts a string, number, boolean or null (absent).
func (v *wireValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return errNotScalar
	}
	switch b[0] {
	case 'n':
		*v = wireValue{}
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = wireValue{s: s, ok: true}
	case '{', '[':
		return errNotScalar
	default: // number, true, false: keep the literal
		*v = wireValue{s: string(b), ok: true}
	}
	return nil
}

// UnmarshalJSON reads a string-to-scalar object, dropping "@class" (the
// EmptyMap marker) and null values.
func (m *wireMetadata) UnmarshalJSON(b []byte) error {
	var raw map[string]wireValue
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = nil
	for k, v := range raw {
		if k == "@class" || !v.ok {
			continue
		}
		if *m == nil {
			*m = make(wireMetadata, len(raw))
		}
		(*m)[k] = v.s
	}
	return nil
}

// oneOrMany reads either an array of T or a single T object, as the legacy
// codec does for "application" and "instance" (XStream-era servers wrote a
// lone element as an object).
type oneOrMany[T any] []T

func (o *oneOrMany[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var one T
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*o = oneOrMany[T]{one}
		return nil
	}
	var many []T
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*o = many
	return nil
}

// rootJSON returns the value of the single expected top-level key.
func rootJSON(body []byte, root string) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, decodeErr(JSON, "malformed JSON", err)
	}
	raw, ok := top[root]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, decodeErr(JSON, "missing root "+strconv.Quote(root), nil)
	}
	return raw, nil
}

func decodeInstanceJSON(raw []byte) (*registry.LeaseView, error) {
	var w wireInstance
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, decodeErr(JSON, "malformed instance", err)
	}
	v, err := w.toLeaseView(JSON)
	if err != nil {
		return nil, decodeErr(JSON, "bad instance", err)
	}
	return v, nil
}

type jsonApplications struct {
	VersionsDelta wireValue                  `json:"versions__delta"`
	AppsHashcode  wireValue                  `json:"apps__hashcode"`
	Application   oneOrMany[jsonApplication] `json:"application"`
}

type jsonApplication struct {
	Name     wireValue               `json:"name"`
	Instance oneOrMany[wireInstance] `json:"instance"`
}

func decodeApplicationsJSON(body []byte) (*registry.Applications, error) {
	var doc jsonApplications
	if !fastApplications(body, &doc) {
		var err error
		if doc, err = slowApplications(body); err != nil {
			return nil, err
		}
	}
	return interpretApplications(doc)
}

// interpretApplications turns a read document into Applications.
func interpretApplications(doc jsonApplications) (*registry.Applications, error) {
	var err error
	apps := &registry.Applications{HashCode: doc.AppsHashcode.s}
	if doc.VersionsDelta.ok {
		if apps.VersionDelta, err = parseInt(doc.VersionsDelta, "versions__delta"); err != nil {
			return nil, decodeErr(JSON, "bad applications", err)
		}
	}
	apps.Apps = make([]registry.Application, 0, len(doc.Application))
	for _, a := range doc.Application {
		app := registry.Application{Name: a.Name.s, Instances: make([]registry.LeaseView, 0, len(a.Instance))}
		for i := range a.Instance {
			v, err := a.Instance[i].toLeaseView(JSON)
			if err != nil {
				return nil, decodeErr(JSON, "bad instance in application "+strconv.Quote(app.Name), err)
			}
			app.Instances = append(app.Instances, *v)
		}
		apps.Apps = append(apps.Apps, app)
	}
	sortApplications(apps)
	return apps, nil
}

// slowApplications is encoding/json's reading of an applications document.
func slowApplications(body []byte) (jsonApplications, error) {
	var doc jsonApplications
	raw, err := rootJSON(body, "applications")
	if err != nil {
		return doc, err
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return doc, decodeErr(JSON, "malformed applications", err)
	}
	return doc, nil
}

// slowInstance is encoding/json's reading of a register body.
func slowInstance(body []byte) (wireInstance, error) {
	var w wireInstance
	raw, err := rootJSON(body, "instance")
	if err != nil {
		return w, err
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return w, decodeErr(JSON, "malformed instance", err)
	}
	return w, nil
}

// sortApplications restores the registry's order: applications by name,
// instances by id (stable, so duplicates keep document order).
func sortApplications(apps *registry.Applications) {
	slices.SortStableFunc(apps.Apps, func(a, b registry.Application) int { return cmpString(a.Name, b.Name) })
	for i := range apps.Apps {
		slices.SortStableFunc(apps.Apps[i].Instances, func(a, b registry.LeaseView) int {
			return cmpString(a.Instance.ID(), b.Instance.ID())
		})
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
