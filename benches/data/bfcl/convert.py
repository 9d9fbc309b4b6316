#!/usr/bin/env python3
"""Build a tool-retrieval benchmark from the BFCL data shipped in the `bfcl-eval` wheel.

Usage:
    pip download --no-deps --only-binary=:all: bfcl-eval==2026.3.23 -d target/bench-data/wheels
    python3 convert.py target/bench-data/wheels/bfcl_eval-2026.3.23-py3-none-any.whl [--out DIR]

Standard library only and deterministic: the same wheel gives byte-identical output.

Writes into DIR (default: target/bench-data/bfcl in the repository):
  catalog.json      {"bfcl": [{name, description, inputSchema}, ...]}  (LiveMCPBench format)
  queries.jsonl     {"id", "style": "bfcl-<category>", "query", "all_of": [[full_name, ...], ...],
                     "exact": [full_name, ...]}
  name-map.json     full name -> original BFCL name, description hash, where it was first seen
  provenance.json   package name/version/license, wheel SHA-256, SHA-256 of every file read

Pooling: every function doc offered by a question of the chosen categories (the distractors of
the "multiple" categories included) goes into ONE catalog under the pseudo-server "bfcl",
deduplicated by (original name, description) (`--pool doc`, the default) or by name alone
(`--pool name`). The first doc seen for a key is kept (its parameters, and with `--pool name`
its description, win over later copies). See README.md for the naming rule.
"""

import argparse
import base64
import collections
import hashlib
import json
import os
import re
import sys
import zipfile

SERVER = "bfcl"
# antler names a catalog tool `{server}_{tool}` and cuts names past 64 characters
# (crates/core/src/tools/naming.rs); we keep every full name within that so the loader
# never renames one.
MAX_FULL_NAME = 64
MAX_TOOL_NAME = MAX_FULL_NAME - len(SERVER) - 1

# Single-turn categories that have a function doc list and a possible answer. In BFCL v4 the
# non-live "simple" category is split by language into three files.
DEFAULT_CATEGORIES = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
]

# BFCL's own type table (bfcl_eval/constants/type_mappings.py, GORILLA_TO_OPENAPI): turns the
# Gorilla types ("dict", "float", "tuple", Java types, ...) into JSON Schema types.
TYPE_MAP = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
    "dict": "object", "object": "object", "tuple": "array", "any": "string",
    "byte": "integer", "short": "integer", "long": "integer", "double": "number",
    "char": "string", "ArrayList": "array", "Array": "array", "HashMap": "object",
    "Hashtable": "object", "Queue": "array", "Stack": "array", "Any": "string",
    "String": "string", "Bigint": "integer",
}

SAFE = re.compile(r"[^A-Za-z0-9_-]")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def short_hash(*parts: str, n: int = 6) -> str:
    return sha256_hex("\0".join(parts).encode("utf-8"))[:n]


def read_wheel(path):
    """The wheel's files we need, checked against its RECORD, plus its metadata."""
    z = zipfile.ZipFile(path)
    names = z.namelist()
    dist_info = sorted({n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")})
    if len(dist_info) != 1:
        sys.exit(f"expected one .dist-info folder in {path}, found {dist_info}")
    dist_info = dist_info[0]
    record = {}
    for row in z.read(f"{dist_info}/RECORD").decode("utf-8").splitlines():
        parts = row.rsplit(",", 2)
        if len(parts) == 3 and parts[1].startswith("sha256="):
            record[parts[0]] = parts[1][len("sha256="):]
    meta = {}
    for line in z.read(f"{dist_info}/METADATA").decode("utf-8").splitlines():
        if not line.strip():
            break  # headers end at the first blank line
        if ":" in line and not line.startswith(" "):
            k, v = line.split(":", 1)
            meta.setdefault(k.strip(), v.strip())

    def read(member):
        data = z.read(member)
        want = record.get(member)
        got = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if want is None or want != got:
            sys.exit(f"{member}: SHA-256 does not match the wheel's RECORD")
        return data

    return z, names, meta, read


def find_data_files(names, category):
    """Question and answer files of a category, whichever BFCL version (v3/v4) the wheel holds."""
    pat_q = re.compile(r"^bfcl_eval/data/BFCL_v(\d+)_" + re.escape(category) + r"\.json$")
    pat_a = re.compile(r"^bfcl_eval/data/possible_answer/BFCL_v(\d+)_" + re.escape(category) + r"\.json$")
    qs = sorted((n for n in names if pat_q.match(n)), key=lambda n: int(pat_q.match(n).group(1)))
    as_ = sorted((n for n in names if pat_a.match(n)), key=lambda n: int(pat_a.match(n).group(1)))
    if not qs or not as_:
        sys.exit(f"category {category}: no question or answer file in the wheel")
    return qs[-1], as_[-1]


def jsonl(data: bytes):
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def to_json_schema(node):
    """A copy of a BFCL parameter schema with Gorilla types mapped to JSON Schema types."""
    if isinstance(node, list):
        return [to_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k == "type" and isinstance(v, str):
            out[k] = TYPE_MAP.get(v, "string")
        elif k == "properties" and isinstance(v, dict):
            out[k] = {pk: to_json_schema(pv) for pk, pv in v.items()}
        elif k in ("items", "additionalProperties") and isinstance(v, (dict, list)):
            out[k] = to_json_schema(v)
        else:
            out[k] = v
    if "type" not in out and "properties" in out:
        out["type"] = "object"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wheel", help="path to bfcl_eval-*.whl")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "..", "target", "bench-data", "bfcl"))
    ap.add_argument("--categories", default=",".join(DEFAULT_CATEGORIES),
                    help="comma-separated BFCL categories (default: %(default)s)")
    ap.add_argument("--pool", choices=["doc", "name"], default="doc",
                    help="dedupe function docs by (name, description) [doc, the default] or by "
                         "name alone, keeping the first description seen [name]")
    args = ap.parse_args()
    categories = [c for c in args.categories.split(",") if c]

    with open(args.wheel, "rb") as f:
        wheel_sha = sha256_hex(f.read())
    z, names, meta, read = read_wheel(args.wheel)

    files_used = {}
    # key (original name, description) -> first doc seen
    docs = {}
    doc_order = []
    first_seen = {}
    offered = collections.Counter()
    questions = []  # (category, id, text, [original names needed], {name: key})
    for cat in categories:
        qfile, afile = find_data_files(names, cat)
        qdata, adata = read(qfile), read(afile)
        files_used[qfile] = sha256_hex(qdata)
        files_used[afile] = sha256_hex(adata)
        answers = {a["id"]: a for a in jsonl(adata)}
        for entry in jsonl(qdata):
            qid = entry["id"]
            by_name = {}
            for fn in entry["function"]:
                if args.pool == "doc":
                    key = (fn["name"], fn.get("description", ""))
                else:
                    key = (fn["name"],)
                if key not in docs:
                    docs[key] = fn
                    doc_order.append(key)
                    first_seen[key] = qid
                offered[key] += 1
                if fn["name"] in by_name:
                    sys.exit(f"{qid}: two function docs named {fn['name']}")
                by_name[fn["name"]] = key
            turn = entry["question"][-1]
            last = turn[-1]
            if last.get("role") != "user":
                sys.exit(f"{qid}: the last message is not the user's")
            text = last["content"].strip()
            needed = []
            for call in answers[qid]["ground_truth"]:
                for fname in call:
                    if fname not in by_name:
                        sys.exit(f"{qid}: answer calls {fname}, which is not offered")
                    if fname not in needed:
                        needed.append(fname)
            if not needed:
                sys.exit(f"{qid}: empty ground truth")
            questions.append((cat, qid, text, needed, by_name))

    # Names: sanitise ('.' is the only character BFCL uses outside [A-Za-z0-9_-]); every doc
    # whose sanitised name is shared with another doc (same name with another description, or
    # e.g. `hotel.book` vs `hotel_book`) gets `__` + 6 hex of SHA-256 of its key (original name,
    # NUL, description; the name alone with --pool name); a name still too long is cut and gets
    # the hash too.
    groups = collections.defaultdict(list)
    for key in doc_order:
        groups[SAFE.sub("_", key[0])].append(key)
    tool_name = {}
    for base, keys in groups.items():
        for key in keys:
            h = short_hash(*key)
            if len(keys) > 1 or len(base) > MAX_TOOL_NAME:
                name = base[: MAX_TOOL_NAME - 2 - len(h)] + "__" + h
            else:
                name = base
            tool_name[key] = name
    if len(set(tool_name.values())) != len(tool_name):
        sys.exit("name clash after disambiguation")
    full = {key: f"{SERVER}_{n}" for key, n in tool_name.items()}
    for f in full.values():
        assert len(f) <= MAX_FULL_NAME and not SAFE.search(f), f

    variants = collections.defaultdict(list)  # original name -> keys, in first-seen order
    for key in doc_order:
        variants[key[0]].append(key)

    catalog = {SERVER: []}
    for key in doc_order:
        fn = docs[key]
        schema = to_json_schema(fn.get("parameters") or {"type": "object", "properties": {}})
        schema["type"] = "object"
        catalog[SERVER].append({
            "name": tool_name[key],
            "description": fn.get("description", ""),
            "inputSchema": schema,
        })

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "catalog.json"), "w", encoding="utf-8") as f:
        json.dump(catalog, f, ensure_ascii=False, indent=2)
        f.write("\n")

    per_cat = collections.Counter()
    lists_hist = collections.Counter()
    with open(os.path.join(args.out, "queries.jsonl"), "w", encoding="utf-8") as f:
        for cat, qid, text, needed, by_name in questions:
            all_of, exact = [], []
            for fname in needed:
                key = by_name[fname]
                alts = [full[key]] + [full[k] for k in variants[fname] if k != key]
                all_of.append(alts)
                exact.append(full[key])
            per_cat[cat] += 1
            lists_hist[len(all_of)] += 1
            f.write(json.dumps({"id": qid, "style": f"bfcl-{cat}", "query": text,
                                "all_of": all_of, "exact": exact}, ensure_ascii=False) + "\n")

    name_map = {}
    for key in doc_order:
        name_map[full[key]] = {
            "bfcl_name": key[0],
            "key_sha256_6": short_hash(*key),
            "first_seen": first_seen[key],
            "offered_in": offered[key],
        }
    with open(os.path.join(args.out, "name-map.json"), "w", encoding="utf-8") as f:
        json.dump(name_map, f, ensure_ascii=False, indent=1)
        f.write("\n")

    prov = {
        "package": meta.get("Name"),
        "version": meta.get("Version"),
        "license": meta.get("License"),
        "wheel": os.path.basename(args.wheel),
        "wheel_sha256": wheel_sha,
        "categories": categories,
        "pool": args.pool,
        "files_sha256": dict(sorted(files_used.items())),
    }
    with open(os.path.join(args.out, "provenance.json"), "w", encoding="utf-8") as f:
        json.dump(prov, f, indent=1)
        f.write("\n")

    renamed = sum(1 for k in doc_order if tool_name[k] != k[0])
    print(f"{prov['package']} {prov['version']} ({prov['license']}), wheel sha256 {wheel_sha}")
    print(f"catalog: {len(doc_order)} function docs under server '{SERVER}' "
          f"({len(variants)} distinct BFCL names; {renamed} names changed by the mapping)")
    print(f"queries: {sum(per_cat.values())}")
    for cat in categories:
        print(f"  bfcl-{cat}: {per_cat[cat]}")
    print("needed functions per query: " + ", ".join(f"{k}: {v}" for k, v in sorted(lists_hist.items())))


if __name__ == "__main__":
    main()
