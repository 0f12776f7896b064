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


# Hostile variations of generated requests (issue 15): every ninth request
# with a body gets JSON nested 80 deep added (the server must answer 400
# nesting_too_deep before validating), and every ninth, shifted, is sent with
# a multipart Content-Type (415 on every operation but adding an item, which
# must answer 400 for a body that is no multipart form). Both statuses are
# documented, so status_code_conformance and not_a_server_error check them.
_count = 0


def _deep(n):
    v = 1
    for _ in range(n):
        v = [v]
    return v


@schemathesis.hook
def map_case(ctx, case):
    global _count
    if case.body is None or isinstance(case.body, (bytes, str)):
        return case
    _count += 1
    if _count % 9 == 4:
        if isinstance(case.body, dict):
            case.body = dict(case.body, deep=_deep(80))
        elif isinstance(case.body, list):
            case.body = case.body + [_deep(80)]
    elif _count % 9 == 7:
        case.headers = dict(case.headers or {}, **{"Content-Type": "multipart/form-data; boundary=capsuled"})
    return case
