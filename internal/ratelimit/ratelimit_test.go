package ratelimit

import (
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestRequestsPerMinute(t *testing.T) {
	t.Parallel()
	c := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(Limits{RequestsPerMinute: 3}, c.now)
	for i := 0; i < 3; i++ {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("request %d refused", i+1)
		}
	}
	ok, wait := l.Allow("a")
	if ok || wait != 20*time.Second {
		t.Fatalf("4th: ok=%v wait=%v, want refused for 20s", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another key shares the bucket")
	}
	c.add(20 * time.Second)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("not refilled after 20s")
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("refilled more than one request")
	}
}

func TestTokensPerMinute(t *testing.T) {
	t.Parallel()
	c := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(Limits{TokensPerMinute: 600}, c.now)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("first request refused")
	}
	l.Charge("a", 900) // 300 in debt
	ok, wait := l.Allow("a")
	if ok || wait != 30*time.Second {
		t.Fatalf("in debt: ok=%v wait=%v, want refused for 30s", ok, wait)
	}
	c.add(30 * time.Second)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("debt not paid back after 30s")
	}
}

func TestDisabled(t *testing.T) {
	t.Parallel()
	var nilLimiter *Limiter
	for _, l := range []*Limiter{nilLimiter, New(Limits{}, nil)} {
		for i := 0; i < 1000; i++ {
			if ok, _ := l.Allow("a"); !ok {
				t.Fatal("a disabled limiter refused")
			}
		}
		l.Charge("a", 1<<30)
	}
}

func TestConcurrentAllowAdmitsExactlyTheLimit(t *testing.T) {
	t.Parallel()
	c := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(Limits{RequestsPerMinute: 50}, c.now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _ := l.Allow("a"); ok {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted != 50 {
		t.Fatalf("admitted %d, want 50", admitted)
	}
}
