"""Runs a plan of MCP requests with the official MCP Python SDK (PyPI `mcp`).

Used by the Go tests of internal/mcpserver: the plan comes as JSON on stdin,
what the server answered goes as JSON to stdout, and the Go test judges it.
The script asserts nothing itself.

Plan: {"transport": "http", "url": URL, "key": KEY}
   or {"transport": "stdio", "command": PATH, "args": [...], "env": {...}},
   plus "mode": the SDK's connect mode ("auto", the default, probes for the
   2026 protocol; "legacy" uses the initialize handshake of 2025 clients),
   and "steps": a list of {"op": "list_tools"} | {"op": "call", "name": N,
   "args": {...}} | {"op": "list_resources"} | {"op": "list_templates"} |
   {"op": "read_resource", "uri": U}.
Output: {"sdk": VERSION, "connect_error": str|null, "results": [...],
"http_statuses": [...]}: one result per step, and the status of every HTTP
response (the SDK's errors do not carry it).
"""

import asyncio
import importlib.metadata
import json
import sys

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def leaves(e):
    """The exceptions inside (nested) exception groups."""
    if isinstance(e, BaseExceptionGroup):
        return [x for sub in e.exceptions for x in leaves(sub)]
    return [e]


async def run_step(client, step):
    op = step["op"]
    try:
        if op == "list_tools":
            res = await client.list_tools()
            return {"tools": [{"name": t.name, "input_schema": t.input_schema} for t in res.tools]}
        if op == "call":
            res = await client.call_tool(step["name"], step.get("args"))
            text = "\n".join(c.text for c in res.content if getattr(c, "type", "") == "text")
            return {"is_error": bool(res.is_error), "text": text, "structured": res.structured_content}
        if op == "list_resources":
            res = await client.list_resources()
            return {"resources": [r.uri for r in res.resources]}
        if op == "list_templates":
            res = await client.list_resource_templates()
            return {"templates": [t.uri_template for t in res.resource_templates]}
        if op == "read_resource":
            res = await client.read_resource(step["uri"])
            return {"text": "".join(getattr(c, "text", "") for c in res.contents)}
        return {"error": "unknown op " + op}
    except Exception as e:  # the Go test judges the message
        return {"error": f"{type(e).__name__}: {e}"}


async def main():
    plan = json.load(sys.stdin)
    out = {"sdk": importlib.metadata.version("mcp"), "connect_error": None, "results": [], "http_statuses": []}
    if plan["transport"] == "http":

        async def record(response):
            out["http_statuses"].append(response.status_code)

        http = httpx2.AsyncClient(
            headers={"Authorization": "Bearer " + plan["key"]}, timeout=120, event_hooks={"response": [record]}
        )
        server = streamable_http_client(plan["url"], http_client=http)
    else:
        server = StdioServerParameters(command=plan["command"], args=plan.get("args", []), env=plan.get("env"))
    try:
        async with Client(server, cache=None, mode=plan.get("mode", "auto")) as client:
            for step in plan.get("steps", []):
                out["results"].append(await run_step(client, step))
    except BaseException as e:  # a refused connection ends in an exception group
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        out["connect_error"] = " | ".join(f"{type(x).__name__}: {x}" for x in leaves(e))
    json.dump(out, sys.stdout)


asyncio.run(main())
