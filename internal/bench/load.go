package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"capsuled/internal/cli"
	"capsuled/internal/loadtest"
)

// runLoad is the open-loop load benchmark:
//
//	capsuled bench load --url http://127.0.0.1:8080 --key KEY --rate 1000 --duration 10m \
//	    --mix models=4,tokens=1,healthz=1 [--pid PID] [--capsule NAME] [--namespace NS] [--json]
//	capsuled bench load ... --attack 0.2
//	capsuled bench load --fake-upstream 127.0.0.1:9099 --duration 10m
//
// The second form serves a fake OpenAI-compatible upstream (an immediate
// search tool call) for measuring the svc-1 upstream path: start capsuled
// with --engine upstream --upstream-url http://127.0.0.1:9099/v1, then load
// it with the chat operation, and compare with loading the fake directly.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlags("bench load", stderr)
	var cfg loadtest.Config
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "server root (loopback addresses only)")
	// The key's default is read after parsing, so -h never prints it.
	fs.StringVar(&cfg.Params.Key, "key", "", "API key (default: env CAPSULED_API_KEY)")
	fs.StringVar(&cfg.Params.Capsule, "capsule", "load", "capsule of the query operation")
	fs.StringVar(&cfg.Params.Namespace, "namespace", "load", "namespace of the memory operation")
	fs.Float64Var(&cfg.Rate, "rate", 100, "arrival rate, requests per second (open loop)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long requests keep starting (≤ 1h)")
	mix := fs.String("mix", "models=4,tokens=1,healthz=1", "weighted operations: "+fmt.Sprint(loadtest.OpNames()))
	fs.IntVar(&cfg.MaxInFlight, "max-in-flight", 2000, "bound on requests in flight (beyond: dropped, counted as errors)")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "time-out of each request")
	fs.IntVar(&cfg.PID, "pid", 0, "server process id, for its resident memory at start and end (0: not measured)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the operation sequence")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	attack := fs.Float64("attack", 0, "also run the mix with attack requests ("+strings.Join(loadtest.AttackOps(), ", ")+") added at this share of --rate (e.g. 0.2), after a run without them; reports the ordinary traffic's p99 and the server's RSS in both")
	fake := fs.String("fake-upstream", "", "serve a fake OpenAI-compatible upstream on this loopback address for --duration instead of sending load")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if cfg.Params.Key == "" {
		cfg.Params.Key = os.Getenv("CAPSULED_API_KEY")
	}
	if *fake != "" {
		return serveFakeUpstream(ctx, *fake, cfg.Duration, stdout)
	}
	m, err := loadtest.ParseMix(*mix)
	if err != nil {
		return err
	}
	cfg.Mix = m
	if *attack != 0 {
		return runAttack(ctx, cfg, *attack, *asJSON, stdout)
	}
	res, err := loadtest.Run(ctx, cfg)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	loadtest.WriteText(stdout, res)
	return nil
}

func serveFakeUpstream(ctx context.Context, addr string, d time.Duration, stdout io.Writer) error {
	if err := loadtest.CheckLoopback("http://" + addr); err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	up := &loadtest.FakeUpstream{}
	srv := &http.Server{Handler: up, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "fake upstream on http://%s/v1 for %v\n", l.Addr(), d)
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintf(stdout, "fake upstream answered %d chat completions\n", up.Requests())
	return nil
}

// attackResult compares the ordinary traffic without and with the attack.
type attackResult struct {
	Baseline loadtest.Result `json:"baseline"`
	Attack   loadtest.Result `json:"attack"`
	// P99Ratio is the ordinary traffic's p99 under attack over its p99
	// without (target ≤ 2).
	P99Ratio float64 `json:"ordinary_p99_ratio"`
}

// runAttack runs cfg's mix alone, then the same mix at the same rate with
// the attack operations added on top at share × rate.
func runAttack(ctx context.Context, cfg loadtest.Config, share float64, asJSON bool, stdout io.Writer) error {
	if share < 0 || share > 10 {
		return fmt.Errorf("attack %g: want a share of the rate between 0 and 10", share)
	}
	var out attackResult
	var err error
	if out.Baseline, err = loadtest.Run(ctx, cfg); err != nil {
		return err
	}
	total := 0.0
	for _, w := range cfg.Mix {
		total += w.Weight
	}
	mixed := slices.Clone(cfg.Mix)
	for _, op := range loadtest.AttackOps() {
		mixed = append(mixed, loadtest.Weighted{Op: op, Weight: total * share / float64(len(loadtest.AttackOps()))})
	}
	ac := cfg
	ac.Mix = mixed
	ac.Rate = cfg.Rate * (1 + share)
	if out.Attack, err = loadtest.Run(ctx, ac); err != nil {
		return err
	}
	if b := out.Baseline.Ordinary.P99ms; b > 0 {
		out.P99Ratio = out.Attack.Ordinary.P99ms / b
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintln(stdout, "== without the attack")
	loadtest.WriteText(stdout, out.Baseline)
	fmt.Fprintln(stdout, "== with the attack")
	loadtest.WriteText(stdout, out.Attack)
	fmt.Fprintf(stdout, "ordinary traffic p99: %.2f ms without, %.2f ms with the attack (×%.2f)\n",
		out.Baseline.Ordinary.P99ms, out.Attack.Ordinary.P99ms, out.P99Ratio)
	if out.Baseline.RSSPeakKB > 0 {
		fmt.Fprintf(stdout, "server RSS peak: %.1f MiB without, %.1f MiB with the attack\n",
			float64(out.Baseline.RSSPeakKB)/1024, float64(out.Attack.RSSPeakKB)/1024)
	}
	return nil
}
