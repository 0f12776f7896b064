"""Schemathesis hooks for capsuled (.ci/schemathesis loads this module).

The memory import operation takes application/x-ndjson, which schemathesis
cannot serialize by itself: a generated array becomes one JSON value a line;
anything else is sent as one JSON line (the server must reject it with 400).
"""
import json

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if isinstance(value, list):
        return "".join(json.dumps(v) + "\n" for v in value).encode()
    return (json.dumps(value) + "\n").encode()
