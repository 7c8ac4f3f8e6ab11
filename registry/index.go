package registry

import "hash/maphash"

// The flat lease index: every lease by a hash of its application and id,
// next to the per-application maps (r.apps) that listings iterate. A
// heartbeat's lookup in the nested maps touched two hash tables, each
// group's control word, slot and key bytes, and at 100k instances and more
// none of it is in the CPU's caches: a heartbeat at 100k cost 1.28x its 10k
// figure, nearly all of it those misses. One table with integer keys is one
// control word and slot; the lease's instance (which the heartbeat reads
// anyway) confirms the match. Leases whose keys share a hash are chained
// through lease.next.

// keyHash is the index's hash of app/id.
func (r *Registry) keyHash(app, id string) uint64 {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(app)
	h.WriteByte(0)
	h.WriteString(id)
	return h.Sum64()
}

// leaseLocked returns the lease of app/id, nil if none. The caller holds
// r.mu (read or write).
func (r *Registry) leaseLocked(app, id string) *lease {
	for l := r.byKey[r.keyHash(app, id)]; l != nil; l = l.next {
		if l.inst.ID() == id && l.inst.App == app {
			return l
		}
	}
	return nil
}

// indexLocked puts l in the index in place of old (either may be nil),
// both under app/id. The caller holds the write lock.
func (r *Registry) indexLocked(app, id string, old, l *lease) {
	h := r.keyHash(app, id)
	head := r.byKey[h]
	if old != nil {
		head = unchain(head, old)
	}
	if l != nil {
		l.next = head
		head = l
	}
	if head == nil {
		delete(r.byKey, h)
	} else {
		r.byKey[h] = head
	}
}

// unchain returns the chain head without l.
func unchain(head, l *lease) *lease {
	if head == l {
		return l.next
	}
	for p := head; p != nil; p = p.next {
		if p.next == l {
			p.next = l.next
			return head
		}
	}
	return head
}
