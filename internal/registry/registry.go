// Package registry holds implementations known by name and chosen by
// configuration, as vLLM names its parsers: looking up an unknown name is an
// error that lists the known ones, so a bad name stops the server at
// start-up instead of failing a request later.
package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Registry maps names to implementations of one kind. It is read-only
// after New.
type Registry[T any] struct {
	kind   string // what the names name, for errors: "tool-call parser"
	def    string // the name an empty name stands for
	byName map[string]T
}

// New returns a registry of kind (used in errors) over byName, where an
// empty name means def (which must be in byName).
func New[T any](kind, def string, byName map[string]T) Registry[T] {
	if _, ok := byName[def]; !ok {
		panic("registry: default " + def + " of " + kind + " is not registered")
	}
	return Registry[T]{kind: kind, def: def, byName: byName}
}

// Names lists the registered names, sorted.
func (r Registry[T]) Names() []string {
	return slices.Sorted(maps.Keys(r.byName))
}

// Lookup returns the name (the default for "") and the implementation
// registered under it; an unknown name is an error listing the known ones.
func (r Registry[T]) Lookup(name string) (string, T, error) {
	if name == "" {
		name = r.def
	}
	v, ok := r.byName[name]
	if !ok {
		var zero T
		return name, zero, fmt.Errorf("unknown %s %q; known: %s", r.kind, name, strings.Join(r.Names(), ", "))
	}
	return name, v, nil
}
