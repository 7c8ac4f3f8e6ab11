package registry

import "strings"

// renewChunk is how many heartbeats RenewAll applies under one read lock:
// enough that the lock, the clock and the renews meter are paid once for
// many heartbeats, few enough that a writer waiting for the write lock
// (a registration, the eviction pass) waits for one chunk, not for a
// relay's whole batch of thousands.
const renewChunk = 256

// RenewAll applies a batch of heartbeats (a relay's aggregated renewals,
// POST goreka/renewals) with exactly the rules of Renew, item by item:
// key validation, static leases, the rule chain with its status
// correction (under the write lock, as Renew takes it), the end of a hold,
// the dirty-timestamp policy, and the renew listener (Options.OnRenew)
// called once per renewed item, so that replication sends each one on as
// the heartbeat it is. What it saves is the per-heartbeat overhead: one
// clock read, one read-lock round and one increment of the renews meter
// per chunk of renewChunk items instead of per item. Between chunks the
// lock is released, so writers are not starved by a large batch. A
// heartbeat that writes (a status correction, the end of a hold, a peer's
// newer copy with its override) ends its chunk, so that the heartbeats
// after it see what it wrote, as they would after Renew.
//
// answer is called once per request, in the batch's order, with what Renew
// would have returned for it; it is called outside the registry's locks
// (it may write to the registry: the chunks after it see what it wrote).
func (r *Registry) RenewAll(reqs []RenewRequest, answer func(i int, err error)) {
	type item struct {
		rn   Renewal
		step renewStep
		err  error // checkKey's
	}
	buf := make([]item, min(len(reqs), renewChunk))
	for start := 0; start < len(reqs); {
		chunk := reqs[start:min(start+renewChunk, len(reqs))]
		now := r.now()
		var renewed int64
		r.mu.RLock()
		n := 0
		for n < len(chunk) {
			req, it := &chunk[n], &buf[n]
			n++
			if it.err = checkKey(req.App, req.ID); it.err != nil {
				continue
			}
			it.rn, it.step = r.renewLocked(strings.ToUpper(req.App), req, now)
			if it.step == renewDone {
				renewed++
			}
			if it.step == renewCorrect || it.step == renewDone && r.dirtyWrites(req, it.rn.Instance) {
				// What follows must see what this one writes (a corrected
				// status, a peer's override), as after Renew: the chunk
				// ends with it.
				break
			}
		}
		r.mu.RUnlock()
		if renewed > 0 {
			r.renews.add(now, renewed)
		}
		for i := range n {
			it := &buf[i]
			err := it.err
			if err == nil {
				app := it.rn.App
				if it.step != renewDone {
					app = strings.ToUpper(chunk[i].App)
				}
				err = r.renewFinish(app, &chunk[i], &it.rn, it.step, now)
			}
			answer(start+i, err)
		}
		start += n
	}
}

// dirtyWrites reports whether checkDirty writes for this renewed
// heartbeat: a peer's newer copy with an override stores the override.
// Caller holds r.mu.
func (r *Registry) dirtyWrites(req *RenewRequest, in *Instance) bool {
	return req.FromPeer && req.OverriddenStatus != "" && req.OverriddenStatus != StatusUnknown &&
		r.compareDirty(req.LastDirtyTimestamp, req.FromPeer, in) == dirtyNewer
}
