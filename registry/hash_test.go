package registry

import "testing"

func TestHashCode(t *testing.T) {
	mk := func(statuses ...Status) *Applications {
		app := Application{Name: "A"}
		for _, s := range statuses {
			app.Instances = append(app.Instances, LeaseView{Instance: &Instance{Status: s}})
		}
		return &Applications{Apps: []Application{app, {Name: "EMPTY"}}}
	}
	tests := []struct {
		name string
		apps *Applications
		want string
	}{
		{"nil", nil, ""},
		{"empty", &Applications{}, ""},
		{"two up", mk("UP", "UP"), "UP_2_"},
		{"nf3 example", mk("UP", "UP", "UP", "DOWN", "OUT_OF_SERVICE", "OUT_OF_SERVICE", "STARTING"), "DOWN_1_OUT_OF_SERVICE_2_STARTING_1_UP_3_"},
		{"unknown and odd", mk("UNKNOWN", "ZZZ", "AAA", "UP"), "AAA_1_UNKNOWN_1_UP_1_ZZZ_1_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.apps.ReconcileHashCode(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseHashCodeRoundTrip(t *testing.T) {
	counts := map[Status]int{}
	ParseHashCode("DOWN_2_OUT_OF_SERVICE_1_UP_10_", counts)
	if got := HashCode(counts); got != "DOWN_2_OUT_OF_SERVICE_1_UP_10_" {
		t.Fatalf("round trip %q", got)
	}
}
