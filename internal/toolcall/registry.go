package toolcall

import "capsuled/internal/registry"

// A Parser finds the tool calls one model family writes as text, by the
// name vLLM gives the same format (--tool-call-parser), so a deployment
// passes one name to both.
type Parser struct {
	name  string
	parse func(text string) ([]Call, string)
}

// Name is the parser's registry name.
func (p Parser) Name() string { return p.name }

// Parse returns the calls in text and the text without them. Text in which
// the parser finds no valid call is returned whole. Parse works on a whole
// reply: a streamed reply is accumulated first, so where its chunks broke
// does not matter.
func (p Parser) Parse(text string) ([]Call, string) {
	if p.parse == nil {
		return Parse(text)
	}
	return p.parse(text)
}

// parsers is the registry: vLLM's parser names and the functions that read
// their formats.
var parsers = registry.New("tool-call parser", DefaultParser, map[string]func(string) ([]Call, string){
	"hermes":      Parse,
	"mistral":     parseMistral,
	"llama3_json": parseLlama3JSON,
	"pythonic":    parsePythonic,
	"qwen3_xml":   parseQwen3XML,
	"deepseek_v3": deepSeekV3.parse,
	"granite":     parseGranite,
	"kimi_k2":     kimiK2.parse,
	"glm45":       parseGLM45,
	"openai":      parseHarmonyCalls,
})

// DefaultParser is the parser of an empty name.
const DefaultParser = "hermes"

// Names lists the registered parser names, sorted.
func Names() []string { return parsers.Names() }

// Lookup returns the parser registered under name ("" is DefaultParser); an
// unknown name is an error that lists the known ones.
func Lookup(name string) (Parser, error) {
	name, f, err := parsers.Lookup(name)
	if err != nil {
		return Parser{}, err
	}
	return Parser{name: name, parse: f}, nil
}
