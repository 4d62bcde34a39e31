"""Drives the official Python MCP SDK's stdio client through a script, for send-once's
interoperability tests (tests/harness/interop.rs): what a real client of that SDK sends
and accepts, rather than what our own Rust code thinks it does.

    .interop/venv/bin/python tests/interop/mcp_client.py [SCRIPT.json] -- CMD [ARGS...]

The script is read from SCRIPT.json, or from stdin when it is not given. It is either a
list of steps or an object:

    {"clientName": "python-mcp-interop", "clientVersion": "0",
     "connect": "initialize",        # or "discover" (server/discover, 2026-07-28)
     "env": {"K": "V"},              # merged over the SDK's default environment, which
                                     # keeps only HOME, PATH, USER... of ours
     "inheritEnv": false,            # true: start from this process's whole environment
     "cwd": "/dir",
     "steps": [...]}

Steps, each printing one JSON line on stdout (after one line for the connection):

    {"op": "list_tools"}
    {"op": "call_tool", "name": "...", "arguments": {...}, "timeoutSeconds": n}
    {"op": "list_resources"}
    {"op": "read_resource", "uri": "..."}
    {"op": "list_prompts"}
    {"op": "ping"}
    {"op": "sleep", "seconds": n}

A step that raises prints {"op": ..., "error": {"code", "message", "data", "type"}}
(code is the JSON-RPC code of an MCPError, null for anything else; a timed-out call is
an MCPError of code -32001) and the run goes on, so one script shows every answer. The
exit code is 0 once every step ran, 1 when the connection itself failed (its line says
why), 2 for a bad command line or script.

Note that the SDK lists the tools by itself before the first call of a tool it has not
seen listed (to validate structured content against the tool's outputSchema), so a
script that calls without listing still sends a tools/list first.
"""

import json
import os
import sys
import traceback

import anyio

from mcp import ClientSession, Implementation, MCPError, StdioServerParameters, stdio_client

DEFAULT_CLIENT_NAME = "python-mcp-interop"


def usage(message):
    print(f"mcp_client.py: {message}", file=sys.stderr)
    print("usage: mcp_client.py [SCRIPT.json] -- CMD [ARGS...]  (the script on stdin when not given)", file=sys.stderr)
    sys.exit(2)


def dump(model):
    """A result model as the wire has it: camelCase names, `_meta`, no absent fields."""
    if model is None:
        return None
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def emit(line):
    print(json.dumps(line, ensure_ascii=False), flush=True)


def error_of(exc):
    if isinstance(exc, MCPError):
        return {"code": exc.code, "message": exc.message, "data": exc.data, "type": type(exc).__name__}
    return {"code": None, "message": str(exc), "data": None, "type": type(exc).__name__}


def read_script(path):
    try:
        text = sys.stdin.read() if path is None else open(path, encoding="utf-8").read()
        script = json.loads(text)
    except (OSError, ValueError) as e:
        usage(f"cannot read the script: {e}")
    if isinstance(script, list):
        script = {"steps": script}
    if not isinstance(script, dict) or not isinstance(script.get("steps", []), list):
        usage("the script is a list of steps or an object with a list `steps`")
    return script


def tool_line(tool):
    shown = dump(tool)
    # Always present, null when the server gave none, so a test can tell "no schema".
    shown["inputSchema"] = shown.get("inputSchema")
    shown["outputSchema"] = shown.get("outputSchema")
    return shown


async def run_step(session, step):
    op = step.get("op")
    if op == "list_tools":
        result = await session.list_tools()
        return {"tools": [tool_line(t) for t in result.tools], "nextCursor": result.next_cursor}
    if op == "call_tool":
        result = await session.call_tool(
            step["name"],
            step.get("arguments"),
            read_timeout_seconds=step.get("timeoutSeconds"),
        )
        raw = dump(result)
        return {
            "name": step["name"],
            "isError": bool(result.is_error),
            "structuredContent": result.structured_content,
            "text": [c.text for c in result.content if getattr(c, "type", None) == "text"],
            "content": raw.get("content", []),
            "_meta": raw.get("_meta"),
        }
    if op == "list_resources":
        result = await session.list_resources()
        return {"resources": [dump(r) for r in result.resources], "nextCursor": result.next_cursor}
    if op == "read_resource":
        return {"uri": step["uri"], "contents": dump(await session.read_resource(step["uri"])).get("contents")}
    if op == "list_prompts":
        result = await session.list_prompts()
        return {"prompts": [dump(p) for p in result.prompts], "nextCursor": result.next_cursor}
    if op == "ping":
        await session.send_ping()
        return {}
    if op == "sleep":
        await anyio.sleep(float(step.get("seconds", 0)))
        return {"seconds": step.get("seconds", 0)}
    raise ValueError(f"unknown op {op!r}")


async def main(script, command):
    env = dict(os.environ) if script.get("inheritEnv") else {}
    env.update(script.get("env", {}))
    params = StdioServerParameters(command=command[0], args=command[1:], env=env or None, cwd=script.get("cwd"))
    client_info = Implementation(
        name=script.get("clientName", DEFAULT_CLIENT_NAME),
        version=script.get("clientVersion", "0"),
    )
    connect = script.get("connect", "initialize")
    if connect not in ("initialize", "discover"):
        usage(f"connect is initialize or discover, not {connect!r}")
    try:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, client_info=client_info) as session:
                return await run_script(session, script, connect)
    except OSError as e:  # the command could not be started
        emit({"op": connect, "error": error_of(e)})
        return 1


async def run_script(session, script, connect):
    try:
        if connect == "discover":
            await session.discover()
        else:
            await session.initialize()
    except Exception as e:  # whatever the server answered is for the test to judge
        emit({"op": connect, "error": error_of(e)})
        return 1
    emit(
        {
            "op": connect,
            "protocolVersion": session.protocol_version,
            "serverInfo": dump(session.server_info),
            "capabilities": dump(session.server_capabilities),
            "instructions": session.instructions,
        }
    )
    for step in script.get("steps", []):
        op = step.get("op") if isinstance(step, dict) else None
        try:
            line = await run_step(session, step)
        except Exception as e:
            emit({"op": op, "error": error_of(e)})
            if not isinstance(e, MCPError):
                traceback.print_exc(file=sys.stderr)
            continue
        emit({"op": op, **line})
    return 0


def parse_argv(argv):
    if "--" not in argv:
        usage("no `--` before the server's command")
    split = argv.index("--")
    before, command = argv[:split], argv[split + 1 :]
    if len(before) > 1 or not command:
        usage("one script at most before `--`, and a command after it")
    return (before[0] if before else None), command


if __name__ == "__main__":
    path, command = parse_argv(sys.argv[1:])
    sys.exit(anyio.run(main, read_script(path), command))
