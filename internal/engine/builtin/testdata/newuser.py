"""svc-1 tried as a new user would: the OpenAI Python SDK over a small
collection of untitled notes, with system prompts written in other words
(the documented tool names described in prose, then tools renamed, then
full tool definitions in `tools`). Tooling only, never run by the server.

    python newuser.py BASE_URL API_KEY

It creates the capsule `newuser-notes`, adds the notes as text items (no
title, no file name), runs the loop for each question and prompt, runs the
tools against the capsule query API, and checks that every report lists the
relevant notes and no irrelevant one. Then it checks the request semantics
the SDK passes in extra_body: continue_final_message continues the last
assistant message (inside its open reasoning block, or as plain text, with
no new <think> block), and echo starts the reply with that message without
nesting reasoning blocks. It exits 1 when a check fails.
"""

import json
import sys
import time
import urllib.error
import urllib.request

from openai import OpenAI

NOTES = {
    "n-router": "The Zephyr 9 router in the lab resets itself when a firmware update fails halfway. Marta Ruiz keeps the spare unit.",
    "n-recover": "To recover a Zephyr 9 after a failed firmware update, hold the reset button for 30 seconds, then load firmware 2.4.1 from the USB stick.",
    "n-marta": "Marta Ruiz works in building C, room 214, and is on call on Tuesdays.",
    "n-plants": "The office plants need watering on Fridays. The ficus near the window gets too much sun.",
    "n-lunch": "Team lunch moved to Thursday at the Italian place on Elm Street; bring cash.",
    "n-printer": "The third-floor printer jams with recycled paper; use the tray on the left.",
}

QUESTIONS = [
    ("How do I bring back a Zephyr 9 router after its firmware update failed?", {"n-recover", "n-router"}, {"n-marta", "n-plants", "n-lunch", "n-printer"}),
    ("Where can I find the person who keeps the spare Zephyr 9 router?", {"n-router", "n-marta"}, {"n-plants", "n-lunch", "n-printer"}),
]

PROMPT_PROSE = """You look things up in our team's notes; never answer from what you remember.
You can run a semantic search (tool "search", give it a query and a limit), look for exact words
(tool "text_search", same arguments), open a note in full (tool "read" with its id) and, when you are
done, hand back the ids of the notes that answer the question with the tool "report_helpful_ids"
(argument "ids", best first). Several calls at once are fine."""

PROMPT_RENAMED = """You are the notes librarian. Only the notes count.

Functions you may call:
- lookup_notes(question, max_results): finds notes whose meaning is close to the question
- grep_notes(pattern, max_results): exact word match in every note
- open_note(note_id): the whole note
- hand_back(note_ids): call it once at the end with the ids of the notes that answer, best first"""

TOOLS_DEFINED = [
    {"type": "function", "function": {"name": "notes_search", "description": "Semantic search over the notes.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "top_k": {"type": "integer"}}, "required": ["query"]}}},
    {"type": "function", "function": {"name": "notes_grep", "description": "Exact keyword match over the notes.",
        "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}}},
    {"type": "function", "function": {"name": "read_note", "description": "Read one note in full.",
        "parameters": {"type": "object", "properties": {"doc_id": {"type": "string"}}, "required": ["doc_id"]}}},
    {"type": "function", "function": {"name": "submit_notes", "description": "Submit the ids of the helpful notes, best first.",
        "parameters": {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string"}}}, "required": ["ids"]}}},
]

STUB = [{"type": "function", "function": {"name": "dummy"}}]


def http(base, key, method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def main(base, key):
    capsule = "newuser-notes"
    http(base, key, "POST", "/v1/capsules", {"name": capsule})
    item_of = {}
    for uri, text in NOTES.items():
        code, it = http(base, key, "POST", f"/v1/capsules/{capsule}/items", {"content": text, "uri": uri})
        assert code in (200, 201, 202), (code, it)
        item_of[it["id"]] = uri
    for _ in range(600):
        code, page = http(base, key, "GET", f"/v1/capsules/{capsule}/items?status=ready&limit=100")
        if len(page.get("data", [])) >= len(NOTES):
            break
        time.sleep(1)
    uri_to_item = {v: k for k, v in item_of.items()}

    def query(q, limit, mode):
        code, hits = http(base, key, "POST", f"/capsules/{capsule}/query",
                          {"query": q, "limit": limit, "wishlist": {"mode": mode, "max_chunks_per_item": 1}})
        return [{"id": h["item_id"], "content": h["content"]} for h in hits]

    client = OpenAI(base_url=base + "/v1", api_key=key)
    runs = [("prose, documented names", PROMPT_PROSE, STUB), ("renamed in the prompt", PROMPT_RENAMED, STUB),
            ("full definitions in tools", "Find the notes that answer the question.", TOOLS_DEFINED)]
    failed = False
    for label, prompt, tools in runs:
        for question, relevant, irrelevant in QUESTIONS:
            msgs = [{"role": "system", "content": prompt}, {"role": "user", "content": question}]
            reported, names = None, set()
            for _ in range(8):
                resp = client.chat.completions.create(model="svc-1", messages=msgs, tools=tools)
                m = resp.choices[0].message
                if not m.tool_calls:
                    break
                msgs.append({"role": "assistant", "content": m.content, "tool_calls": [tc.model_dump() for tc in m.tool_calls]})
                for tc in m.tool_calls:
                    names.add(tc.function.name)
                    args = json.loads(tc.function.arguments)
                    name = tc.function.name
                    if name in ("report_helpful_ids", "hand_back", "submit_notes"):
                        reported = next(v for v in args.values() if isinstance(v, list))
                        out = "ok"
                    elif name in ("read", "open_note", "read_note"):
                        iid = next(iter(args.values()))
                        out = NOTES.get(item_of.get(iid, ""), "")
                    else:
                        q = args.get("query") or args.get("question") or args.get("pattern")
                        limit = args.get("limit") or args.get("max_results") or args.get("top_k") or 5
                        semantic = name in ("search", "lookup_notes", "notes_search")
                        out = json.dumps(query(q, limit, "hybrid" if semantic else "keyword"))
                    msgs.append({"role": "tool", "tool_call_id": tc.id, "content": out})
                if reported is not None:
                    break
            got = [item_of.get(i, i) for i in (reported or [])]
            ok = reported is not None and relevant <= set(got) and not (set(got) & irrelevant)
            failed = failed or not ok
            print(f"{'ok  ' if ok else 'FAIL'} [{label}] {question}\n      tools called: {sorted(names)}\n      reported: {got}")
    failed = prefill_checks(client) or failed
    sys.exit(1 if failed else 0)


def think_depth(s):
    """The deepest nesting of <think> blocks in s, and whether all close."""
    depth = deepest = 0
    while True:
        i, j = s.find("<think>"), s.find("</think>")
        if i < 0 and j < 0:
            return deepest, depth == 0
        if j < 0 or (0 <= i < j):
            depth += 1
            deepest = max(deepest, depth)
            s = s[i + len("<think>"):]
        else:
            depth -= 1
            s = s[j + len("</think>"):]


def prefill_checks(client):
    """continue_final_message and echo, as a client sends them (extra_body)."""
    question = "How do I bring back a Zephyr 9 router after its firmware update failed?"
    open_think = "<think>\nThe question names a router; let me"
    cont = {"continue_final_message": True, "add_generation_prompt": False}

    def reply(prefill, extra):
        msgs = [{"role": "system", "content": PROMPT_PROSE}, {"role": "user", "content": question},
                {"role": "assistant", "content": prefill}]
        m = client.chat.completions.create(model="svc-1", messages=msgs, tools=STUB, extra_body=extra).choices[0].message
        return m.content or "", len(m.tool_calls or [])

    checks = []
    content, calls = reply(open_think, cont)
    checks.append(("continue inside open reasoning", "<think>" not in content and content.count("</think>") == 1
                   and calls > 0 and think_depth(open_think + content) == (1, True), content))
    content, calls = reply("I will search for", cont)
    checks.append(("continue plain text", "<think>" not in content and "</think>" not in content and calls > 0, content))
    content, _ = reply(open_think, {"echo": True})
    checks.append(("echo of open reasoning", content.startswith(open_think) and think_depth(content) == (1, True), content))
    content, _ = reply(open_think, {**cont, "echo": True})
    checks.append(("echo and continue", content.startswith(open_think) and content.count("<think>") == 1
                   and think_depth(content) == (1, True), content))
    content, _ = reply("PREFIX ", {"echo": True})
    d, closed = think_depth(content)
    checks.append(("echo of plain text", content.startswith("PREFIX ") and d <= 1 and closed, content))
    failed = False
    for label, ok, content in checks:
        failed = failed or not ok
        print(f"{'ok  ' if ok else 'FAIL'} [{label}] {content[:160]!r}")
    return failed


if __name__ == "__main__":
    main(sys.argv[1].rstrip("/"), sys.argv[2])
