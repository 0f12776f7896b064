// Package toolcall parses tool calls out of model text and reads the
// arguments of svc-1's four tools.
//
// Model servers that do not return structured tool calls leave them in the
// text, in the format of the model's family. A registry of parsers, chosen
// by the names vLLM gives them (Lookup, Names), reads them: hermes, mistral,
// llama3_json, pythonic, qwen3_xml, deepseek_v3 (V3 and V3.1), granite,
// kimi_k2, glm45 and openai (the harmony format of gpt-oss and Context-1;
// HarmonyReasoning also serves the openai_gptoss reasoning parser). Each
// parser reads whole replies and keeps in the text whatever it cannot read
// as a call. The engine and the shared suite
// (testdata/parsers.json, run by internal/engine/upstream) check that a
// streamed reply gives the same result wherever its chunks broke.
//
// Parse is the Hermes parser (`<tool_call>{"name": …, "arguments": {…}}</tool_call>`,
// used by Qwen, Hermes and many vLLM chat templates): it finds every such
// call, tolerating an unclosed last tag, arguments given as an object or as a
// JSON string, and the key "parameters" for "arguments"; it returns the text
// with the calls removed.
//
// The argument readers accept the documented shapes and their obvious
// variants: read takes {"id"}, {"doc_id"}, {"item_id"} or {"ids": [one]};
// report_helpful_ids takes {"ids": […]}, {"helpful_ids"}, {"doc_ids"} or a
// comma-separated string; search and text_search take {"query", "limit"}
// (also "q" or "queries").
package toolcall
