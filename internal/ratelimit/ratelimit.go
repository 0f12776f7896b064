// Package ratelimit enforces per-key request and token rates with token
// buckets: each key has a bucket of requests per minute and one of tokens per
// minute, refilled continuously. A request is admitted when its key's request
// bucket has a whole request left and its token bucket is not in debt; the
// tokens a request used are charged after it ran (so a large request can put
// its key into debt, which the refill pays back before the next is admitted).
//
// Limits are per process: with several replicas behind a load balancer each
// replica enforces them on the traffic it sees.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// Limits are per-key rates; zero turns a limit off.
type Limits struct {
	RequestsPerMinute int
	TokensPerMinute   int
}

// Limiter holds the buckets of every key seen recently.
type Limiter struct {
	limits Limits
	now    func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	sweep   time.Time
}

type bucket struct {
	requests float64 // available requests
	tokens   float64 // available tokens; negative is debt
	last     time.Time
}

// New returns a Limiter; now may be nil (time.Now).
func New(l Limits, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{limits: l, now: now, buckets: map[string]*bucket{}}
}

// Enabled reports whether any limit is on.
func (l *Limiter) Enabled() bool {
	return l != nil && (l.limits.RequestsPerMinute > 0 || l.limits.TokensPerMinute > 0)
}

// Allow admits one request of key, or returns how long to wait.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	if !l.Enabled() {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key)
	var wait time.Duration
	if rpm := float64(l.limits.RequestsPerMinute); rpm > 0 && b.requests < 1 {
		wait = max(wait, time.Duration((1-b.requests)/rpm*float64(time.Minute)))
	}
	if tpm := float64(l.limits.TokensPerMinute); tpm > 0 && b.tokens < 0 {
		wait = max(wait, time.Duration(-b.tokens/tpm*float64(time.Minute)))
	}
	if wait > 0 {
		return false, wait
	}
	if l.limits.RequestsPerMinute > 0 {
		b.requests--
	}
	return true, 0
}

// Charge debits the tokens a request of key used.
func (l *Limiter) Charge(key string, tokens int) {
	if !l.Enabled() || l.limits.TokensPerMinute <= 0 || tokens <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key)
	b.tokens -= float64(tokens)
}

// refill brings key's bucket up to date (creating it full), and now and then
// forgets buckets that have been full for a while.
func (l *Limiter) refill(key string) *bucket {
	now := l.now()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{requests: float64(l.limits.RequestsPerMinute), tokens: float64(l.limits.TokensPerMinute), last: now}
		l.buckets[key] = b
	}
	elapsed := now.Sub(b.last).Minutes()
	if elapsed > 0 {
		b.requests = math.Min(float64(l.limits.RequestsPerMinute), b.requests+elapsed*float64(l.limits.RequestsPerMinute))
		b.tokens = math.Min(float64(l.limits.TokensPerMinute), b.tokens+elapsed*float64(l.limits.TokensPerMinute))
		b.last = now
	}
	if now.Sub(l.sweep) > 5*time.Minute {
		l.sweep = now
		for k, v := range l.buckets {
			if now.Sub(v.last) > 2*time.Minute {
				delete(l.buckets, k)
			}
		}
	}
	return b
}
