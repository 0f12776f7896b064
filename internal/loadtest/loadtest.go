package loadtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is one load run.
type Config struct {
	// URL is the server root, e.g. http://127.0.0.1:8080; loopback only.
	URL string
	// Params are the key, capsule and namespace of the operations.
	Params Params
	// Rate is the arrival rate in requests per second.
	Rate float64
	// Duration is how long requests keep starting (at most 1h).
	Duration time.Duration
	// Mix is the weighted choice of operations.
	Mix Mix
	// MaxInFlight bounds the requests in flight; a request due while the
	// bound is reached is not sent and counts as dropped. Default 2000.
	MaxInFlight int
	// Timeout bounds each request. Default 10s.
	Timeout time.Duration
	// PID is the server's process id for its resident memory (0: none).
	PID int
	// Seed makes the sequence of operations reproducible.
	Seed uint64
}

// OpResult is the outcome of one operation's requests.
type OpResult struct {
	Op         string         `json:"op"`
	Requests   int            `json:"requests"`
	Errors     int            `json:"errors"`
	Dropped    int            `json:"dropped"`
	Statuses   map[string]int `json:"statuses"`
	P50ms      float64        `json:"p50_ms"`
	P99ms      float64        `json:"p99_ms"`
	MaxMs      float64        `json:"max_ms"`
	Throughput float64        `json:"throughput_rps"`
}

// Result is the outcome of a run.
type Result struct {
	URL      string     `json:"url"`
	Rate     float64    `json:"rate_rps"`
	Duration float64    `json:"duration_s"`
	Elapsed  float64    `json:"elapsed_s"`
	Ops      []OpResult `json:"ops"`
	Total    OpResult   `json:"total"`
	// Ordinary is the total over the operations that are not attacks.
	Ordinary   OpResult `json:"ordinary"`
	RSSStartKB int64    `json:"rss_start_kb,omitempty"`
	RSSEndKB   int64    `json:"rss_end_kb,omitempty"`
	RSSPeakKB  int64    `json:"rss_peak_kb,omitempty"`
}

// validate checks the configuration and applies defaults.
func (c *Config) validate() error {
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 2000
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	switch {
	case c.Rate <= 0 || c.Rate > 100000:
		return fmt.Errorf("rate %g: want 0 < rate ≤ 100000 requests per second", c.Rate)
	case c.Duration <= 0 || c.Duration > time.Hour:
		return fmt.Errorf("duration %v: want 0 < duration ≤ 1h", c.Duration)
	case len(c.Mix) == 0:
		return errors.New("mix: no operations")
	}
	return CheckLoopback(c.URL)
}

// CheckLoopback refuses any target that is not a loopback address.
func CheckLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("url %q: want http://127.0.0.1:PORT", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("url %q: load runs only against loopback addresses (127.0.0.0/8, ::1, localhost)", raw)
	}
	return nil
}

type sample struct {
	op      string
	latency time.Duration
	status  int // 0: transport error; -1: dropped
}

// Run sends the load and reports. It stops when the duration is over and
// every request in flight has finished or timed out, or when ctx ends.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	base := strings.TrimRight(cfg.URL, "/")
	tr := &http.Transport{
		MaxIdleConns:        cfg.MaxInFlight,
		MaxIdleConnsPerHost: cfg.MaxInFlight,
		IdleConnTimeout:     30 * time.Second,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: cfg.Timeout}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6361707375))

	res := Result{URL: base, Rate: cfg.Rate, Duration: cfg.Duration.Seconds()}
	var peak int64
	if cfg.PID > 0 {
		kb, err := RSSKB(cfg.PID)
		if err != nil {
			return res, err
		}
		res.RSSStartKB, peak = kb, kb
	}

	samples := make(chan sample, 4096)
	var collected []sample
	collectDone := make(chan struct{})
	go func() {
		for s := range samples {
			collected = append(collected, s)
		}
		close(collectDone)
	}()

	stopRSS := make(chan struct{})
	var rssWG sync.WaitGroup
	if cfg.PID > 0 {
		rssWG.Add(1)
		go func() {
			defer rssWG.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stopRSS:
					return
				case <-t.C:
					if kb, err := RSSKB(cfg.PID); err == nil && kb > peak {
						peak = kb
					}
				}
			}
		}()
	}

	sem := make(chan struct{}, cfg.MaxInFlight)
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	start := time.Now()
	n := int64(cfg.Duration / interval)
	for i := int64(0); i < n; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			select {
			case <-ctx.Done():
				i = n
				continue
			case <-time.After(d):
			}
		}
		op := cfg.Mix.pick(rng.Float64())
		select {
		case sem <- struct{}{}:
		default:
			samples <- sample{op: op, status: -1}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			samples <- send(ctx, client, base, cfg.Params, op, due)
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start).Seconds()
	close(samples)
	<-collectDone
	if cfg.PID > 0 {
		close(stopRSS)
		rssWG.Wait()
		kb, err := RSSKB(cfg.PID)
		if err != nil {
			return res, fmt.Errorf("server process %d gone at the end: %w", cfg.PID, err)
		}
		res.RSSEndKB = kb
		res.RSSPeakKB = max(peak, kb)
	}
	res.Ops, res.Total = summarize(collected, res.Elapsed)
	var ordinary []sample
	for _, s := range collected {
		if !IsAttack(s.op) {
			ordinary = append(ordinary, s)
		}
	}
	res.Ordinary = summarizeOne("ordinary", ordinary, res.Elapsed)
	return res, ctx.Err()
}

func send(ctx context.Context, c *http.Client, base string, p Params, op string, due time.Time) sample {
	req, err := Ops[op](ctx, base, p)
	if err != nil {
		return sample{op: op, latency: time.Since(due)}
	}
	resp, err := c.Do(req)
	if err != nil {
		return sample{op: op, latency: time.Since(due)}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return sample{op: op, latency: time.Since(due), status: resp.StatusCode}
}

func summarize(all []sample, elapsed float64) ([]OpResult, OpResult) {
	byOp := map[string][]sample{}
	for _, s := range all {
		byOp[s.op] = append(byOp[s.op], s)
	}
	var ops []OpResult
	for op, ss := range byOp {
		ops = append(ops, summarizeOne(op, ss, elapsed))
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Op < ops[j].Op })
	return ops, summarizeOne("total", all, elapsed)
}

func summarizeOne(op string, ss []sample, elapsed float64) OpResult {
	r := OpResult{Op: op, Statuses: map[string]int{}}
	var lat []time.Duration
	for _, s := range ss {
		r.Requests++
		switch {
		case s.status == -1:
			r.Dropped++
			r.Errors++
			r.Statuses["dropped"]++
			continue
		case s.status == 0:
			r.Errors++
			r.Statuses["transport_error"]++
		case s.status >= 400:
			r.Errors++
			r.Statuses[strconv.Itoa(s.status)]++
		default:
			r.Statuses[strconv.Itoa(s.status)]++
		}
		lat = append(lat, s.latency)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r.P50ms = ms(quantile(lat, 0.50))
	r.P99ms = ms(quantile(lat, 0.99))
	if len(lat) > 0 {
		r.MaxMs = ms(lat[len(lat)-1])
	}
	if elapsed > 0 {
		r.Throughput = float64(r.Requests-r.Errors) / elapsed
	}
	return r
}

// quantile is the nearest-rank quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = min(max(i, 0), len(sorted)-1)
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// RSSKB reads VmRSS (in kB) of a process from /proc/PID/status.
func RSSKB(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}

// WriteText prints a result as a table.
func WriteText(w io.Writer, r Result) {
	fmt.Fprintf(w, "open-loop load: %s at %.0f req/s for %.0fs (elapsed %.1fs)\n", r.URL, r.Rate, r.Duration, r.Elapsed)
	fmt.Fprintf(w, "%-16s %9s %8s %8s %10s %10s %10s %12s  %s\n", "op", "requests", "errors", "dropped", "p50 ms", "p99 ms", "max ms", "ok req/s", "statuses")
	for _, o := range append(r.Ops, r.Total) {
		fmt.Fprintf(w, "%-16s %9d %8d %8d %10.2f %10.2f %10.2f %12.1f  %s\n", o.Op, o.Requests, o.Errors, o.Dropped, o.P50ms, o.P99ms, o.MaxMs, o.Throughput, statuses(o.Statuses))
	}
	if r.RSSStartKB > 0 {
		change := 100 * float64(r.RSSEndKB-r.RSSStartKB) / float64(r.RSSStartKB)
		fmt.Fprintf(w, "server RSS: start %.1f MiB, end %.1f MiB (%+.1f%%), peak %.1f MiB\n",
			float64(r.RSSStartKB)/1024, float64(r.RSSEndKB)/1024, change, float64(r.RSSPeakKB)/1024)
	}
}

func statuses(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
