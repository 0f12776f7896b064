package app

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"capsuled/api"
	"capsuled/internal/chat"
	"capsuled/internal/embed/modelfiles"
	"capsuled/internal/embed/wordpiece"
	"capsuled/internal/engine/builtin"
	"capsuled/internal/reasoning"
	"capsuled/internal/toolcall"
)

// ChatConfig configures the svc-1 engine: builtin or upstream.
type ChatConfig struct {
	// Engine is "builtin" (default) or "upstream".
	Engine string
	// UpstreamURL is the OpenAI-compatible base URL (ending in /v1) of the
	// upstream engine; UpstreamModel its model name; UpstreamKey an optional
	// bearer key; UpstreamTimeout bounds each upstream call (default 60s).
	UpstreamURL     string
	UpstreamModel   string
	UpstreamKey     string
	UpstreamTimeout time.Duration
	// UpstreamToolParser and UpstreamReasoningParser name the parsers
	// (vLLM's names, as given to vLLM's --tool-call-parser and
	// --reasoning-parser) that read tool calls and reasoning the upstream
	// left in the text; defaults hermes and qwen3. An unknown name fails at
	// start-up with the list of known ones.
	UpstreamToolParser      string
	UpstreamReasoningParser string
	// Tokenizer is the path of the embedding model's vocab.txt or
	// tokenizer.json (or a folder holding one), used to count usage tokens.
	// Default: the embedder's model folder (Capsules.ONNXDir, then
	// $CAPSULED_MODEL_DIR, then <data>/models/all-MiniLM-L6-v2); without
	// any, pre-tokens are counted.
	Tokenizer string
}

// RegisterFlags adds the svc-1 settings to a serve command's flags.
func (c *ChatConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Engine, "engine", envOr("CAPSULED_ENGINE", "builtin"), "svc-1 engine: builtin or upstream (env CAPSULED_ENGINE)")
	fs.StringVar(&c.UpstreamURL, "upstream-url", os.Getenv("CAPSULED_UPSTREAM_URL"), "OpenAI-compatible base URL of the upstream engine, e.g. http://127.0.0.1:8000/v1 (env CAPSULED_UPSTREAM_URL)")
	fs.StringVar(&c.UpstreamModel, "upstream-model", os.Getenv("CAPSULED_UPSTREAM_MODEL"), "model name on the upstream engine (env CAPSULED_UPSTREAM_MODEL)")
	// A key's flag has no default: cli.Parse fills it from the environment
	// after parsing, so that -h never prints the key.
	fs.StringVar(&c.UpstreamKey, "upstream-key", "", "bearer key of the upstream engine, if any (env CAPSULED_UPSTREAM_KEY)")
	d := 60 * time.Second
	if v, err := time.ParseDuration(os.Getenv("CAPSULED_UPSTREAM_TIMEOUT")); err == nil {
		d = v
	}
	fs.DurationVar(&c.UpstreamTimeout, "upstream-timeout", d, "time-out of each upstream call (env CAPSULED_UPSTREAM_TIMEOUT)")
	fs.StringVar(&c.UpstreamToolParser, "upstream-tool-parser", envOr("CAPSULED_UPSTREAM_TOOL_PARSER", toolcall.DefaultParser),
		"tool-call parser of the upstream's text, by vLLM's name: "+strings.Join(toolcall.Names(), ", ")+" (env CAPSULED_UPSTREAM_TOOL_PARSER)")
	fs.StringVar(&c.UpstreamReasoningParser, "upstream-reasoning-parser", envOr("CAPSULED_UPSTREAM_REASONING_PARSER", reasoning.DefaultParser),
		"reasoning parser of the upstream's text, by vLLM's name: "+strings.Join(reasoning.Names(), ", ")+" (env CAPSULED_UPSTREAM_REASONING_PARSER)")
	fs.StringVar(&c.Tokenizer, "tokenizer", os.Getenv("CAPSULED_TOKENIZER"), "vocab.txt or tokenizer.json for usage counting (env CAPSULED_TOKENIZER)")
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// newChat builds the svc-1 chat service.
func (a *App) newChat(ctx context.Context) (api.Chat, error) {
	c := a.cfg.Chat
	counter := a.tokenCounter(c.Tokenizer)
	var engine chat.Engine
	switch c.Engine {
	case "", "builtin":
		engine = builtin.New(builtin.Config{})
	case "upstream":
		e, err := newUpstream(c)
		if err != nil {
			return nil, err
		}
		engine = e
	default:
		return nil, fmt.Errorf("engine %q: want builtin or upstream", c.Engine)
	}
	return chat.New(chat.Config{Engine: engine, Counter: counter, Now: a.cfg.Now})
}

// tokenCounter returns the WordPiece tokenizer of the embedding model, so
// that usage counts word pieces whenever the model is on this machine. It
// looks, in order, at --tokenizer (a vocab.txt or tokenizer.json, or a
// folder holding one), the embedder's model folder (--onnx-dir, env
// CAPSULED_ONNX_DIR), CAPSULED_MODEL_DIR (the sentence-transformers folder)
// and <data>/models/all-MiniLM-L6-v2. Without any, usage counts pre-tokens
// (chat.PreTokenCounter), as the spec's usage paragraph says.
func (a *App) tokenCounter(path string) chat.TokenCounter {
	dirs := []string{a.cfg.Capsules.ONNXDir, os.Getenv("CAPSULED_MODEL_DIR"), filepath.Join(a.cfg.DataDir, "models", modelfiles.DefaultName)}
	for _, p := range tokenizerCandidates(path, dirs) {
		t, err := wordpiece.Load(p)
		if err != nil {
			a.log.Warn("tokenizer unreadable; trying the next", "path", p, "err", err)
			continue
		}
		a.log.Debug("usage counts WordPiece tokens", "vocabulary", p)
		return t
	}
	a.log.Warn("no WordPiece vocabulary found (no embedding model on this machine); usage counts pre-tokens", "hint", "run .ci/fetch-model.sh or pass --onnx-dir or --tokenizer")
	return chat.PreTokenCounter{}
}

// tokenizerCandidates lists the existing vocabulary files, most wanted
// first: path itself (or the vocabulary in it when it is a folder), then
// those of dirs. An explicit path hides the folders.
func tokenizerCandidates(path string, dirs []string) []string {
	if path != "" {
		dirs = []string{path}
	}
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		st, err := os.Stat(d)
		if err != nil {
			continue
		}
		if !st.IsDir() {
			out = append(out, d)
			continue
		}
		for _, name := range []string{"vocab.txt", "tokenizer.json"} {
			if st, err := os.Stat(filepath.Join(d, name)); err == nil && st.Mode().IsRegular() {
				out = append(out, filepath.Join(d, name))
			}
		}
	}
	return out
}
