package registry

import (
	"reflect"
	"testing"
	"time"
)

func all(apps []AppOutline) []bool {
	w := make([]bool, len(apps))
	for i := range w {
		w[i] = true
	}
	return w
}

func TestOutlineMatchesTheDocuments(t *testing.T) {
	r, clk, _ := newReg(t)
	for _, k := range [][2]string{{"B", "b1"}, {"A", "a1"}, {"A", "a2"}, {"C", "c1"}} {
		if _, err := r.Register(inst(k[0], k[1], StatusUp), false); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Second)
	if err := r.Cancel("C", "c1", false); err != nil {
		t.Fatal(err)
	}
	o := r.OutlineApplications(all)
	full := r.Applications()
	if !reflect.DeepEqual(o.Views, full.Apps) || o.HashCode != full.HashCode || o.Revision != full.Revision {
		t.Fatalf("full outline views %+v, want %+v", o.Views, full.Apps)
	}
	if got := []AppOutline{{"A", 3, 2}, {"B", 1, 1}}; !reflect.DeepEqual(o.Apps, got) {
		t.Fatalf("full outline %+v, want %+v", o.Apps, got)
	}
	d := r.OutlineDelta(all)
	delta := r.Delta()
	if !reflect.DeepEqual(d.Views, delta.Apps) || d.VersionDelta+1 != delta.VersionDelta {
		t.Fatalf("delta outline views %+v, want %+v", d.Views, delta.Apps)
	}
	// C's registration and cancel are one entry: the delta lists c1 once.
	if got := []AppOutline{{"A", 3, 2}, {"B", 1, 1}, {"C", 5, 1}}; !reflect.DeepEqual(d.Apps, got) {
		t.Fatalf("delta outline %+v, want %+v", d.Apps, got)
	}

	// Only what pick asks for is copied.
	o = r.OutlineApplications(func(apps []AppOutline) []bool { return []bool{false, true} })
	if o.Views[0].Name != "" || o.Views[1].Name != "B" {
		t.Fatalf("picked views %+v", o.Views)
	}

	// A change moves its application's revision only.
	if err := r.StatusUpdate("B", "b1", StatusOutOfService, clk.Now(), false); err != nil {
		t.Fatal(err)
	}
	o = r.OutlineApplications(nil)
	if got := []AppOutline{{"A", 3, 2}, {"B", 6, 1}}; !reflect.DeepEqual(o.Apps, got) {
		t.Fatalf("after a change %+v, want %+v", o.Apps, got)
	}

	// Pruning shrinks the delta outline and forgets a gone application.
	clk.Advance(time.Minute)
	r.PruneRecentlyChanged(30 * time.Second)
	if d := r.OutlineDelta(nil); len(d.Apps) != 0 {
		t.Fatalf("delta outline after pruning everything: %+v", d.Apps)
	}
	if _, ok := r.appRev["C"]; ok {
		t.Fatal("a gone application's revision is kept after its delta entries are pruned")
	}
}
