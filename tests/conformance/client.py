#!/usr/bin/env python3
"""Drives antler as a user would, for one client scenario of the official MCP conformance
suite (`@modelcontextprotocol/conformance`).

The suite runs `client.py ANTLER URL` with the scenario's name in
MCP_CONFORMANCE_SCENARIO and its credentials, if any, in MCP_CONFORMANCE_CONTEXT. This
script then does what a person would: it puts the server into an extensions file as a
streamable-HTTP entry (with an `oauth` object when the scenario hands out a client),
lists its tools with `antler mcp list`, signs in with `antler mcp login` when antler says
so (opening the printed address like a browser that follows redirects), and runs a
scripted `-p` (a `--replay` file, no model) that calls each of the server's tools,
accepting elicitations that have defaults. Everything it decides comes from what antler
printed; it knows no scenario's answer.

Exit status: 0 when the last run succeeded, 1 otherwise (the suite judges by what the
server saw, not by this).
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request

SERVER = "conformance"
# Sign-ins one scenario may need (a login, then a step-up); more means antler kept asking.
MAX_SIGN_INS = 5
TIMEOUT = 60


def log(*parts):
    print("driver:", *parts, file=sys.stderr, flush=True)


def browse(url):
    """Opens `url` as a browser would: GET, following redirects, to antler's loopback
    redirect page at the end."""
    log("opening", url)
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:
            answer.read()
    except urllib.error.HTTPError as err:
        log("the browser got", err.code)
    except OSError as err:
        log("the browser failed:", err)


def run(antler, env, args, stdin=None):
    """Runs antler; every sign-in address it prints on stderr is opened as it appears.
    Returns (exit status, stdout, stderr)."""
    process = subprocess.Popen(
        [antler, *args],
        env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    err_lines = []

    def watch():
        for line in process.stderr:
            err_lines.append(line)
            sys.stderr.write(line)
            found = re.match(r"^\s+(https?://\S+)\s*$", line)
            if found:
                threading.Thread(target=browse, args=(found.group(1),), daemon=True).start()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    if stdin is not None:
        process.stdin.write(stdin)
        process.stdin.close()
    out = process.stdout.read()
    process.wait(TIMEOUT)
    watcher.join(TIMEOUT)
    return process.returncode, out, "".join(err_lines)


# The Client ID Metadata Document a user of antler would publish and name in
# `client_metadata_url`; the suite's authorization servers take this one without fetching it.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def oauth_entry(context):
    """The server entry's `oauth` object: the user's client metadata document, and the
    client the scenario hands out, if any (what a user copies from the authorization
    server's console)."""
    oauth = {"client_metadata_url": CLIENT_METADATA_URL}
    if "client_id" not in context:
        return oauth
    oauth["client_id"] = context["client_id"]
    if "client_secret" in context:
        oauth["client_secret"] = "$CONFORMANCE_CLIENT_SECRET"
    if "private_key_pem" in context:
        oauth["private_key_file"] = "key.pem"
        oauth["signing_algorithm"] = context.get("signing_algorithm", "ES256")
    if context["name"].startswith("auth/client-credentials"):
        oauth["grant_type"] = "client_credentials"
        del oauth["client_metadata_url"]
    if "idp_id_token" in context:
        oauth["grant_type"] = "cross_app_access"
        oauth["identity_provider"] = {
            "issuer": context["idp_issuer"],
            "token_endpoint": context["idp_token_endpoint"],
            "client_id": context["idp_client_id"],
            "id_token": "$CONFORMANCE_ID_TOKEN",
        }
        del oauth["client_metadata_url"]
    return oauth


def needs_sign_in(text):
    return f"antler mcp login {SERVER}" in text


def placeholder(schema):
    """A value for a parameter of `schema`'s type."""
    kind = schema.get("type")
    if "default" in schema:
        return schema["default"]
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    return {
        "number": 1,
        "integer": 1,
        "boolean": True,
        "array": [],
        "object": {},
    }.get(kind, "test")


def arguments(tool):
    schema = tool.get("input_schema") or tool.get("inputSchema") or {}
    properties = schema.get("properties") or {}
    return {name: placeholder(properties[name]) for name in schema.get("required", []) if name in properties}


def main():
    antler, url = sys.argv[1], sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    context.setdefault("name", scenario)
    home = tempfile.mkdtemp(prefix="antler-conformance-")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, "config"),
        "XDG_DATA_HOME": os.path.join(home, "data"),
        "XDG_STATE_HOME": os.path.join(home, "state"),
        "ANTLER_LOG": "antler=debug",
    }
    entry = {"type": "http", "url": url, "tool_name_prefix": False}
    entry["oauth"] = oauth_entry(context)
    if "client_secret" in context:
        env["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
    if "idp_id_token" in context:
        env["CONFORMANCE_ID_TOKEN"] = context["idp_id_token"]
    if "private_key_pem" in context:
        with open(os.path.join(home, "key.pem"), "w") as key:
            key.write(context["private_key_pem"])
    extensions = os.path.join(home, "extensions_config.json")
    with open(extensions, "w") as f:
        json.dump({"mcpServers": {SERVER: entry}}, f)
    config = os.path.join(home, "config.yaml")
    with open(config, "w") as f:
        f.write("tool_search:\n  enabled: false\n")
    common = ["--extensions", extensions, "--config", config, "-C", home]

    def signed_in(args):
        """Runs `args`; while antler says to sign in, signs in and runs them again."""
        for _ in range(MAX_SIGN_INS + 1):
            code, out, err = run(antler, env, [*args, *common])
            if not needs_sign_in(err + out):
                return code, out, err
            login, _, _ = run(antler, env, ["mcp", "login", SERVER, "--no-browser", *common])
            if login != 0:
                return code, out, err
        return code, out, err

    code, out, err = signed_in(["mcp", "list", "--json"])
    try:
        servers = json.loads(out)
        tools = next(s for s in servers if s.get("name") == SERVER).get("tools") or []
    except (ValueError, StopIteration):
        tools = []
    if not tools:
        code, out, err = run(antler, env, ["tools", "list", "--json", *common])
        try:
            tools = [t for t in json.loads(out) if t.get("server") == SERVER]
        except ValueError:
            tools = []
    log("tools:", [t.get("name") for t in tools])
    calls = [
        {"id": f"call_{i}", "name": t["name"], "arguments": arguments(t)}
        for i, t in enumerate(tools)
    ]
    turns = os.path.join(home, "turns.jsonl")
    with open(turns, "w") as f:
        if calls:
            f.write(json.dumps({"tool_calls": calls}) + "\n")
        f.write(json.dumps({"content": "done"}) + "\n")
    code, out, err = signed_in(
        [
            "-p",
            "call every tool",
            "--replay",
            turns,
            "--permission-mode",
            "allow-all",
            "--elicitation",
            "accept-defaults",
            "--output-format",
            "stream-json",
        ]
    )
    sys.stdout.write(out)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
