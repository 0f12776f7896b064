package toolcall

import "strings"

// OpenAI's harmony format (gpt-oss and models tuned from it, such as the
// agentic search model Context-1), as a server that does not parse it
// returns it in the content: messages of the form
//
//	<|start|>assistant<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>json]<|message|>BODY<|end|>
//
// where the analysis channel is reasoning, final is the answer, commentary
// without a recipient is a preamble shown to the user, and a message to
// functions.NAME (ended by <|call|>) is a tool call with BODY as arguments.
// The first message's <|start|>assistant is in the prompt, so a reply often
// begins at <|channel|>.

type harmonyMsg struct {
	channel, recipient, body string
}

const (
	hMessage = "<|message|>"
	hStart   = "<|start|>"
	hChannel = "<|channel|>"
)

// splitHarmony cuts text into messages; text outside any message is a
// message with no channel. ok is false when text has no harmony message.
func splitHarmony(text string) (msgs []harmonyMsg, ok bool) {
	if !strings.Contains(text, hMessage) {
		return nil, false
	}
	s := text
	for len(msgs) < 4*maxCalls {
		m := strings.Index(s, hMessage)
		if m < 0 {
			break
		}
		head := s[:m]
		h := len(head)
		for _, tag := range []string{hStart, hChannel} {
			if i := strings.Index(head, tag); i >= 0 && i < h {
				h = i
			}
		}
		if plain := strings.TrimSpace(head[:h]); plain != "" {
			msgs = append(msgs, harmonyMsg{body: plain})
		}
		msg := parseHarmonyHeader(head[h:])
		body := s[m+len(hMessage):]
		end, next := len(body), len(body)
		for _, t := range []string{"<|end|>", "<|call|>", "<|return|>", hStart} {
			if i := strings.Index(body, t); i >= 0 && i < end {
				end, next = i, i+len(t)
				if t == hStart {
					next = i // the next message's header
				}
			}
		}
		msg.body = strings.TrimSpace(body[:end])
		msgs = append(msgs, msg)
		s = body[next:]
	}
	if plain := strings.TrimSpace(s); plain != "" {
		msgs = append(msgs, harmonyMsg{body: plain})
	}
	return msgs, true
}

// parseHarmonyHeader reads the channel and recipient of a header such as
// "<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json"
// (the recipient may also stand before <|channel|>).
func parseHarmonyHeader(h string) harmonyMsg {
	var m harmonyMsg
	if i := strings.Index(h, hChannel); i >= 0 {
		c := h[i+len(hChannel):]
		if j := strings.IndexAny(c, " <"); j >= 0 {
			c = c[:j]
		}
		m.channel = strings.TrimSpace(c)
	}
	if i := strings.Index(h, "to="); i >= 0 {
		r := h[i+len("to="):]
		if j := strings.IndexAny(r, " <\n"); j >= 0 {
			r = r[:j]
		}
		m.recipient = strings.TrimSpace(r)
	}
	return m
}

// harmonyCall is the call of a message to a function, if it is one.
func harmonyCall(m harmonyMsg) (Call, bool) {
	if m.recipient == "" {
		return Call{}, false
	}
	name := strings.TrimPrefix(m.recipient, "functions.")
	if !validName(name, "") {
		return Call{}, false
	}
	vals, _ := jsonValues(m.body, "")
	args, isObj := first(vals).(map[string]any)
	if !isObj {
		args = map[string]any{}
	}
	return Call{Name: name, Arguments: argsJSON(args)}, true
}

// parseHarmonyCalls is the "openai" tool-call parser: the calls are the
// messages to functions.NAME; the text is the final answer and the
// preambles (and any text outside messages). Analysis messages are
// reasoning, which the openai_gptoss reasoning parser takes out before.
func parseHarmonyCalls(text string) ([]Call, string) {
	msgs, ok := splitHarmony(text)
	if !ok {
		return nil, text
	}
	var calls []Call
	var rest []string
	for _, m := range msgs {
		if c, ok := harmonyCall(m); ok {
			if len(calls) < maxCalls {
				calls = append(calls, c)
			}
			continue
		}
		if m.channel != "analysis" {
			rest = append(rest, m.body)
		}
	}
	return calls, join(rest...)
}

// HarmonyReasoning separates the analysis channel of a harmony reply from
// the rest: reasoning is the analysis messages' text; rest keeps the tool
// calls as harmony messages (for the openai tool-call parser) and the final
// answer and preambles as plain text. ok is false, and text is returned as
// rest, when text has no harmony message.
func HarmonyReasoning(text string) (reasoning, rest string, ok bool) {
	msgs, ok := splitHarmony(text)
	if !ok {
		return "", text, false
	}
	var r, out []string
	for _, m := range msgs {
		switch {
		case m.recipient != "":
			out = append(out, hChannel+"commentary to="+m.recipient+" "+hMessage+m.body+"<|call|>")
		case m.channel == "analysis":
			r = append(r, m.body)
		default:
			out = append(out, m.body)
		}
	}
	return join(r...), join(out...), true
}
