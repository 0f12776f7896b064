// Package toolcall parses tool calls out of model text and reads the
// arguments of svc-1's four tools.
//
// Engines that do not return structured tool calls write them as text: the
// Hermes format (`<tool_call>{"name": …, "arguments": {…}}</tool_call>`, used
// by Qwen, Hermes and many vLLM chat templates), sometimes inside the
// reasoning. Parse finds every such call, tolerating an unclosed last tag,
// arguments given as an object or as a JSON string, and the key "parameters"
// for "arguments"; it returns the text with the calls removed.
//
// The argument readers accept the documented shapes and their obvious
// variants: read takes {"id"}, {"doc_id"}, {"item_id"} or {"ids": [one]};
// report_helpful_ids takes {"ids": […]}, {"helpful_ids"}, {"doc_ids"} or a
// comma-separated string; search and text_search take {"query", "limit"}
// (also "q" or "queries").
package toolcall
