package registry

// BulkResult is what RegisterAll did with its batch.
type BulkResult struct {
	// Stored are the instances stored (the registry's copy: the newer
	// stored one where it won by LastDirtyTimestamp), in the batch's order
	// of those that were not refused.
	Stored []*Instance
	// Refused holds, for each refused instance, its index in the batch
	// and the error Register would have returned.
	Refused []BulkRefusal
}

// BulkRefusal is one instance RegisterAll did not store.
type BulkRefusal struct {
	Index int
	Err   error
}

// RegisterAll registers a batch of instances (a peer's registry at
// start-up) with exactly the rules of Register, one instance at a time:
// validation, the newer stored copy by LastDirtyTimestamp wins, stored
// overrides, static and imported instances are not replaced, the limit on
// instances. What it saves is the per-instance lock round and delivery: it
// takes the write lock once per batch and delivers the batch's events
// (one per instance, in order, as many Registers would) after releasing
// it. The registry takes ownership of the instances. Keep batches to a
// few thousand: writers wait for the lock while a batch is stored.
func (r *Registry) RegisterAll(ins []*Instance, fromPeer bool) BulkResult {
	now := r.now()
	var res BulkResult
	ok := make([]bool, len(ins))
	for i, in := range ins {
		err := r.prepare("", in, now)
		if err == nil {
			err = reservedMeta(in.Metadata)
		}
		if err != nil {
			res.Refused = append(res.Refused, BulkRefusal{Index: i, Err: err})
			continue
		}
		ok[i] = true
	}
	res.Stored = make([]*Instance, 0, len(ins)-len(res.Refused))
	r.mu.Lock()
	for i, in := range ins {
		if !ok[i] {
			continue
		}
		if err := r.ownedLocked(in.App, in.ID()); err != nil {
			res.Refused = append(res.Refused, BulkRefusal{Index: i, Err: err})
			continue
		}
		if r.maxN > 0 && r.size >= r.maxN && r.apps[in.App][in.ID()] == nil {
			res.Refused = append(res.Refused, BulkRefusal{Index: i, Err: &LimitError{Max: r.maxN}})
			continue
		}
		res.Stored = append(res.Stored, r.registerLocked(in, fromPeer, now))
	}
	r.mu.Unlock()
	r.deliver()
	return res
}
