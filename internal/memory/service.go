package memory

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sort"
	"strings"
	"time"

	"capsuled/internal/domain"
)

// Config configures the service. Zero fields take the documented defaults.
type Config struct {
	// Aliases are model ids that select the default memory model: the
	// first model of the first generator (the configured upstream, else the
	// extractive model). The app passes "svc-1", the one model id of the
	// retrieval interface, whose memory operation takes the same request.
	Aliases []string
	// BudgetTokens is the default token budget of the injected memory
	// block. Default 1000.
	BudgetTokens int
	// MaxBudgetTokens caps a request's own budget. Default 16000.
	MaxBudgetTokens int
	// ContextTurns is how many turns before the latest user message shape
	// the selection query. Default 4.
	ContextTurns int
	// Candidates is how many memories each retriever proposes. Default 60.
	Candidates int
	// RecencyWeight scales the recency bonus, in units of a first-rank
	// score. Default 0.05 (a tie-breaker; measured on LoCoMo:
	// docs/experiments/memory.md); negative turns it off.
	RecencyWeight float64
	// RecencyHalfLife is the age at which the recency bonus halves.
	// Default 30 days.
	RecencyHalfLife time.Duration
	// ExtractAttempts is how often fact extraction is tried before it is
	// recorded as failed. Default 3.
	ExtractAttempts int
	// ExtractTimeout bounds one extraction attempt. Default 30s.
	ExtractTimeout time.Duration
	// DenseWeight is the weight of the dense ranking in the fusion (BM25's
	// is 1; 1 is the retrieval core's Alpha 0.5). Default 1 (measured on
	// LoCoMo: docs/experiments/memory.md).
	DenseWeight float64
	// IndexAlone indexes each turn by its own text only. By default a turn
	// is indexed (for BM25 and its vector) together with the turns before
	// and after it in its batch, so an answer is found by the words of its
	// question; what is stored and injected is the turn's own text.
	IndexAlone bool
	// EmbedAlone embeds each turn by its own text (with its speaker's
	// name) while BM25 still indexes it with its neighbours.
	EmbedAlone bool
	// IndexWindow is how many turns on each side join a turn's full-text
	// (BM25) index text. Default 2 (measured on LoCoMo: docs/experiments/memory.md).
	IndexWindow int
	// Fusion combines the retrievers: FusionCore (default: the capsule
	// retrieval core's convex mix; measured on LoCoMo: docs/experiments/memory.md),
	// FusionConvex or FusionRRF.
	Fusion Fusion
	// SpeakerWeight is the bonus, in units of a first-rank score, of a
	// turn whose speaker's (first) name the query mentions. Default 0.5
	// (measured on LoCoMo: docs/experiments/memory.md); negative turns it off.
	SpeakerWeight float64
	// OwnRepeat is how many times a turn's own text is in its index text
	// (the neighbours once): a field weight for the turn itself, so that of
	// the turns whose windows match, the one that said it ranks first.
	// Default 2.
	OwnRepeat int
	// EmbedWindow and EmbedOwnRepeat are IndexWindow and OwnRepeat for the
	// text a turn's vector is computed from. Default 1 and 2: a wider
	// window helps BM25 (more of the exchange's words) but blurs the
	// vector (measured on LoCoMo: docs/experiments/memory.md).
	EmbedWindow    int
	EmbedOwnRepeat int
	// NeighbourPenalty is the share of its score a turn loses for each
	// turn of its index window that ranks above it (see Service.diversify).
	// Default 0 (off: it lowered evidence recall on LoCoMo, where evidence
	// turns are often neighbours).
	NeighbourPenalty float64
	// FeedbackWeight moves the query vector towards the mean vector of the
	// best three candidates by this much, and the dense part of every score
	// is taken again from the moved vector (pseudo-relevance feedback; with
	// FusionCore and an embedder). Default 0.5 (measured on LoCoMo:
	// docs/experiments/memory.md); negative turns it off.
	FeedbackWeight float64
	// DateWeight is the bonus, in units of a first-rank score, of a memory
	// valid on the day or in the month the query names ("on 7 July, 2023",
	// "in May 2023"; a day either side). Default 1 (measured on LoCoMo:
	// docs/experiments/memory.md); negative turns it off.
	DateWeight float64
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.BudgetTokens <= 0 {
		c.BudgetTokens = 1000
	}
	if c.MaxBudgetTokens <= 0 {
		c.MaxBudgetTokens = 16000
	}
	if c.ContextTurns <= 0 {
		c.ContextTurns = 4
	}
	if c.Candidates <= 0 {
		c.Candidates = 60
	}
	if c.RecencyWeight == 0 {
		c.RecencyWeight = 0.05
	}
	if c.Fusion == "" {
		c.Fusion = FusionCore
	}
	if c.DateWeight == 0 {
		c.DateWeight = 1
	}
	if c.FeedbackWeight == 0 {
		c.FeedbackWeight = 0.5
	}
	if c.SpeakerWeight == 0 {
		c.SpeakerWeight = 0.5
	}
	if c.OwnRepeat <= 0 {
		c.OwnRepeat = 2
	}
	if c.NeighbourPenalty > 1 {
		c.NeighbourPenalty = 1
	}
	if c.EmbedWindow <= 0 {
		c.EmbedWindow = 1
	}
	if c.EmbedOwnRepeat <= 0 {
		c.EmbedOwnRepeat = 2
	}
	if c.IndexWindow <= 0 {
		c.IndexWindow = 2
	}
	if c.DenseWeight <= 0 {
		c.DenseWeight = 1
	}
	if c.RecencyHalfLife <= 0 {
		c.RecencyHalfLife = 30 * 24 * time.Hour
	}
	if c.ExtractAttempts <= 0 {
		c.ExtractAttempts = 3
	}
	if c.ExtractTimeout <= 0 {
		c.ExtractTimeout = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Deps are the service's collaborators. Store and at least one generator
// are required; Embedder (keyword-only retrieval without), Tokens (default
// ApproxTokens) and Extractor (turns are the only memories without) are
// optional.
type Deps struct {
	Store      Store
	Embedder   Embedder
	Tokens     TokenCounter
	Generators []Generator
	Extractor  Extractor
	Log        *slog.Logger
}

// Service is the memory service.
type Service struct {
	cfg       Config
	store     Store
	emb       Embedder
	tok       TokenCounter
	gens      map[string]Generator
	aliases   map[string]string // alias → model (svc-1 → the default memory model)
	models    []string
	extractor Extractor
	log       *slog.Logger
	vectors   *vectorCache
}

// New returns a Service. Generators are tried by model name; the first
// generator's first model is the default listed first.
func New(cfg Config, d Deps) (*Service, error) {
	if d.Store == nil {
		return nil, errors.New("memory: a Store is required")
	}
	if f := cfg.Fusion; f != "" && f != FusionRRF && f != FusionConvex && f != FusionCore {
		return nil, fmt.Errorf("memory: fusion %q: want %s, %s or %s", f, FusionRRF, FusionConvex, FusionCore)
	}
	if len(d.Generators) == 0 {
		return nil, errors.New("memory: at least one generator is required")
	}
	s := &Service{cfg: cfg.WithDefaults(), store: d.Store, emb: d.Embedder, tok: d.Tokens, gens: map[string]Generator{}, extractor: d.Extractor, log: d.Log,
		vectors: newVectorCache(5 * time.Second)}
	if s.tok == nil {
		s.tok = ApproxTokens{}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	for _, g := range d.Generators {
		for _, m := range g.Models() {
			if _, dup := s.gens[m]; dup {
				return nil, fmt.Errorf("memory: model %q is served by two generators", m)
			}
			s.gens[m] = g
			s.models = append(s.models, m)
		}
	}
	s.aliases = map[string]string{}
	for _, a := range cfg.Aliases {
		if _, taken := s.gens[a]; taken {
			return nil, fmt.Errorf("memory: alias %q is also a generator's model", a)
		}
		if len(s.models) > 0 {
			s.aliases[a] = s.models[0]
		}
	}
	return s, nil
}

// Fingerprint is the system_fingerprint a model's replies carry when it is
// known before the reply (a generator with a fixed one); "" otherwise (an
// upstream model server says its own with the reply).
func (s *Service) Fingerprint(model string) string {
	if _, g, ok := s.generator(model); ok {
		if f, ok := g.(interface{ Fingerprint() string }); ok {
			return f.Fingerprint()
		}
	}
	return ""
}

// DefaultModel is the model an alias (svc-1) selects.
func (s *Service) DefaultModel() string { return s.models[0] }

// generator resolves a requested model id, alias or not, to the model and
// the generator that serves it.
func (s *Service) generator(model string) (string, Generator, bool) {
	if real, ok := s.aliases[model]; ok {
		model = real
	}
	g, ok := s.gens[model]
	return model, g, ok
}

// Models lists the model ids the memory operation accepts: the
// generators' models, then the aliases.
func (s *Service) Models() []string {
	out := append([]string(nil), s.models...)
	return append(out, s.cfg.Aliases...)
}

// Embedder is the service's embedder (nil: keyword-only retrieval).
func (s *Service) Embedder() Embedder { return s.emb }

// Config returns the service's effective configuration.
func (s *Service) Config() Config { return s.cfg }

// live is the filter of memories that count now.
func (s *Service) live() domain.LiveFilter { return domain.LiveFilter{Now: s.cfg.Now()} }

// newID returns a random id with the prefix, such as mem_3kTq….
func newID(prefix string) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var b strings.Builder
	b.WriteString(prefix)
	max := big.NewInt(int64(len(alphabet)))
	for i := 0; i < 22; i++ {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		b.WriteByte(alphabet[n.Int64()])
	}
	return b.String()
}

// checkNamespace validates a namespace name.
func checkNamespace(ns string) error { return domain.ValidateNamespace(ns) }

// notFound maps the store's sentinel to a client error for a memory.
func notFound(err error, what, id string) error {
	if errors.Is(err, domain.ErrNotFound) {
		return domain.NotFound(what, id)
	}
	return err
}

// sortByScore sorts ids by descending score, then id.
func sortByScore(ids []string, score map[string]float64) {
	sort.SliceStable(ids, func(i, j int) bool {
		if score[ids[i]] != score[ids[j]] {
			return score[ids[i]] > score[ids[j]]
		}
		return ids[i] < ids[j]
	})
}
