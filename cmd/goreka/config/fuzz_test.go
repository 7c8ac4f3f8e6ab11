package config

import "testing"

// FuzzParse checks that no file content makes the parsers or the placeholder
// resolver panic.
func FuzzParse(f *testing.F) {
	f.Add("server.port: ${PORT:8081}\n---\nspring.profiles: a\nx: [1, 2]\n")
	f.Add("a=b\\\n  c\n\\u0041: ${a:${b}}\n#---\nx y\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string, []byte) ([]*document, error){parseYAML, parseProperties} {
			docs, err := parse("f", []byte(s))
			if err != nil {
				continue
			}
			st := &stack{environ: map[string]string{}}
			for _, d := range docs {
				st.layers = append(st.layers, newLayer(d))
				_, _ = matchProfiles(d.onProfile, []string{"a"})
			}
			for _, l := range st.layers {
				for k := range l.entries {
					_, _, _ = st.resolved(k)
				}
			}
		}
	})
}
