package registry

import (
	"errors"
	"testing"
	"time"
)

// RegisterAll keeps Register's per-instance rules: the newer stored copy
// wins by LastDirtyTimestamp, an invalid instance and a static one are
// refused with Register's errors, the limit holds, and every stored
// instance is one Register event, in the batch's order, after the call.
func TestRegisterAllKeepsTheRules(t *testing.T) {
	c := newClock()
	var events []Event
	r := New(Options{Now: c.Now, ExpectedClients: 1, MaxInstances: 4, OnEvent: func(e Event) { events = append(events, e) }})
	newer := inst("ORDERS", "a", StatusUp)
	newer.LastDirtyTimestamp = c.Now()
	mustRegister(t, r, newer, false)
	if _, err := r.SetStatic([]*Instance{inst("STATIC", "s", StatusUp)}); err != nil {
		t.Fatal(err)
	}
	events = nil
	older := inst("ORDERS", "a", StatusDown)
	older.LastDirtyTimestamp = c.Now().Add(-time.Minute)
	bad := inst("ORDERS", "", StatusUp)
	bad.HostName = ""
	res := r.RegisterAll([]*Instance{older, inst("ORDERS", "b", StatusUp), bad, inst("STATIC", "s", StatusUp),
		inst("USERS", "c", StatusUp), inst("USERS", "d", StatusUp)}, true)
	if len(res.Stored) != 3 || res.Stored[0].Status != StatusUp || res.Stored[1].ID() != "b" || res.Stored[2].ID() != "c" {
		t.Fatalf("stored %v", res.Stored)
	}
	refused := map[int]error{}
	for _, f := range res.Refused {
		refused[f.Index] = f.Err
	}
	var ve *ValidationError
	var le *LimitError
	if len(refused) != 3 || !errors.As(refused[2], &ve) || refused[3] == nil || !errors.As(refused[5], &le) {
		t.Fatalf("refused %v", res.Refused)
	}
	if got := status(t, r, "ORDERS", "a"); got != StatusUp {
		t.Errorf("the older copy replaced the newer one: %s", got)
	}
	if len(events) != 3 || events[0].ID != "a" || events[1].ID != "b" || events[2].ID != "c" || !events[0].FromPeer ||
		events[0].Revision >= events[1].Revision {
		t.Errorf("events %+v", events)
	}
}
