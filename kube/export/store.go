package export

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// store is what the exporter knows of one kind of object in the export
// namespace: an informer's cache, plus the objects goreka itself wrote
// and the informer has not delivered yet. Without that overlay a
// reconcile right after a write would read the older copy, and write
// again (or fail on a resourceVersion conflict).
type store[T metav1.Object] struct {
	indexer cache.Indexer

	mu      sync.Mutex
	overlay map[string]written[T] // by name
}

// written is a write the informer has not caught up with: the object as
// the API server returned it, or, for a delete, gone (with the last
// resourceVersion goreka saw).
type written[T metav1.Object] struct {
	obj  T
	gone bool
	rv   uint64
}

func newStore[T metav1.Object](inf cache.SharedIndexInformer) *store[T] {
	return &store[T]{indexer: inf.GetIndexer(), overlay: map[string]written[T]{}}
}

func rvOf(o metav1.Object) (uint64, bool) {
	rv, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	return rv, err == nil
}

// seen is the informer's delivery of o (added, updated, or deleted): the
// overlay entry it catches up with is dropped.
func (s *store[T]) seen(o metav1.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.overlay[o.GetName()]
	if !ok {
		return
	}
	if rv, ok := rvOf(o); !ok || rv >= w.rv {
		delete(s.overlay, o.GetName())
	}
}

// wrote records the API server's answer to a create or update.
func (s *store[T]) wrote(o T) {
	rv, _ := rvOf(o) // 0 without one (a fake clientset)
	s.mu.Lock()
	defer s.mu.Unlock()
	// The informer may have delivered it already (before this call).
	if c, ok := s.cached(o.GetNamespace(), o.GetName()); ok {
		if crv, ok := rvOf(c); (ok && crv >= rv && rv > 0) || (rv == 0 && equality.Semantic.DeepEqual(c, o)) {
			delete(s.overlay, o.GetName())
			return
		}
	}
	s.overlay[o.GetName()] = written[T]{obj: o, rv: rv}
}

// deleted records a successful delete of o.
func (s *store[T]) deleted(o T) {
	rv, _ := rvOf(o)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cached(o.GetNamespace(), o.GetName()); !ok {
		delete(s.overlay, o.GetName())
		return
	}
	s.overlay[o.GetName()] = written[T]{gone: true, rv: rv}
}

func (s *store[T]) cached(ns, name string) (T, bool) {
	var zero T
	o, exists, err := s.indexer.GetByKey(ns + "/" + name)
	if err != nil || !exists {
		return zero, false
	}
	t, ok := o.(T)
	return t, ok
}

// forget drops what goreka wrote of name: the next read is the
// informer's (after a conflict or a not-found, which say it is stale).
func (s *store[T]) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.overlay, name)
}

// pending is how many writes the informer has not delivered yet.
func (s *store[T]) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.overlay)
}

// get returns the object named name, or false.
func (s *store[T]) get(ns, name string) (T, bool) {
	s.mu.Lock()
	w, ok := s.overlay[name]
	s.mu.Unlock()
	if ok {
		return w.obj, !w.gone
	}
	return s.cached(ns, name)
}

// byIndex returns the objects the informer files under index value v,
// with the overlay applied (written objects of that value included).
func (s *store[T]) byIndex(index, v string, match func(T) bool) []T {
	objs, _ := s.indexer.ByIndex(index, v)
	seen := map[string]bool{}
	var out []T
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range objs {
		t, ok := o.(T)
		if !ok {
			continue
		}
		seen[t.GetName()] = true
		if w, ok := s.overlay[t.GetName()]; ok {
			if w.gone {
				continue
			}
			t = w.obj
		}
		if match(t) {
			out = append(out, t)
		}
	}
	for name, w := range s.overlay {
		if !seen[name] && !w.gone && match(w.obj) {
			out = append(out, w.obj)
		}
	}
	return out
}

// all returns every object the store knows of, with the overlay applied.
func (s *store[T]) all() []T {
	seen := map[string]bool{}
	var out []T
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.indexer.List() {
		t, ok := o.(T)
		if !ok {
			continue
		}
		seen[t.GetName()] = true
		if w, ok := s.overlay[t.GetName()]; ok {
			if w.gone {
				continue
			}
			t = w.obj
		}
		out = append(out, t)
	}
	for name, w := range s.overlay {
		if !seen[name] && !w.gone {
			out = append(out, w.obj)
		}
	}
	return out
}
