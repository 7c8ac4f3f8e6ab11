package registry

import "hash/maphash"

// keyHash is a hash of app/id, the key of the recently-changed queue's
// per-instance sequence numbers (outline.go).
func (r *Registry) keyHash(app, id string) uint64 {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(app)
	h.WriteByte(0)
	h.WriteString(id)
	return h.Sum64()
}
