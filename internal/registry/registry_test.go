package registry_test

import (
	"slices"
	"strings"
	"testing"

	"capsuled/internal/registry"
)

func TestLookup(t *testing.T) {
	r := registry.New("greeter", "en", map[string]string{"en": "hello", "pt": "olá"})
	if got := r.Names(); !slices.Equal(got, []string{"en", "pt"}) {
		t.Fatalf("Names() = %v", got)
	}
	if name, v, err := r.Lookup(""); err != nil || name != "en" || v != "hello" {
		t.Fatalf(`Lookup("") = %q, %q, %v; want the default`, name, v, err)
	}
	if name, v, err := r.Lookup("pt"); err != nil || name != "pt" || v != "olá" {
		t.Fatalf(`Lookup("pt") = %q, %q, %v`, name, v, err)
	}
	_, _, err := r.Lookup("fr")
	if err == nil || !strings.Contains(err.Error(), `unknown greeter "fr"; known: en, pt`) {
		t.Fatalf(`Lookup("fr") error = %v; want one naming the kind and the known names`, err)
	}
}

func TestNewRefusesAnUnregisteredDefault(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New with an unregistered default did not panic")
		}
	}()
	registry.New("greeter", "de", map[string]string{"en": "hello"})
}
