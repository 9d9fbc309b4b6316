#!/usr/bin/env python3
"""Write queries-dev-zh.jsonl and queries-cross.jsonl from the LiveMCPBench dev queries and the
hand translations in translations.py. Standard library only, deterministic.

    python3 build.py [--bench ../shared/bench/livemcp beside the repository] [--out DIR]
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from translations import EN, ZH  # noqa: E402

HAN = re.compile(r"[\u3400-\u9fff]")
SAFE = re.compile(r"[^A-Za-z0-9_-]")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--bench", default=os.path.join(here, "..", "..", "..", "..", "shared", "bench", "livemcp")
    )
    ap.add_argument("--out", default=here)
    args = ap.parse_args()

    catalog = json.load(open(os.path.join(args.bench, "catalog.json"), encoding="utf-8"))
    zh_tools = set()
    all_tools = set()
    for server, tools in catalog.items():
        for t in tools:
            full = SAFE.sub("_", f"{server}_{t['name']}")
            all_tools.add(full)
            if HAN.search(t.get("description") or ""):
                zh_tools.add(full)

    dev = [json.loads(l) for l in open(os.path.join(args.bench, "queries-dev.jsonl"), encoding="utf-8") if l.strip()]
    zh_orig = {q["id"] for q in dev if HAN.search(q["query"])}
    if set(EN) != zh_orig:
        sys.exit(f"EN translations {sorted(EN)} != Chinese originals {sorted(zh_orig)}")
    want_zh = {q["id"] for q in dev} - zh_orig
    if set(ZH) != want_zh:
        sys.exit(f"ZH translations missing {sorted(want_zh - set(ZH))}, extra {sorted(set(ZH) - want_zh)}")
    for k, v in ZH.items():
        if not HAN.search(v):
            sys.exit(f"{k}: translation has no Chinese")

    os.makedirs(args.out, exist_ok=True)
    n_cross = {"en->zh-tool": 0, "zh->en-tool": 0}
    with open(os.path.join(args.out, "queries-dev-zh.jsonl"), "w", encoding="utf-8") as fz, \
         open(os.path.join(args.out, "queries-cross.jsonl"), "w", encoding="utf-8") as fc:
        for q in dev:
            for n in q["any_of"]:
                if n not in all_tools:
                    sys.exit(f"{q['id']}: {n} not in catalog")
            orig_zh = q["id"] in zh_orig
            zh_text = q["query"] if orig_zh else ZH[q["id"]]
            en_text = EN[q["id"]] if orig_zh else q["query"]
            fz.write(json.dumps({
                "id": q["id"], "style": q["style"], "query": zh_text, "any_of": q["any_of"],
                "en": en_text, "orig_lang": "zh" if orig_zh else "en",
            }, ensure_ascii=False) + "\n")
            zh_targets = [n for n in q["any_of"] if n in zh_tools]
            en_targets = [n for n in q["any_of"] if n not in zh_tools]
            # English query for a tool described in Chinese; Chinese query for one in English.
            for direction, query, targets, suffix, original in (
                ("en->zh-tool", en_text, zh_targets, "en", not orig_zh),
                ("zh->en-tool", zh_text, en_targets, "zh", orig_zh),
            ):
                if not targets:
                    continue
                n_cross[direction] += 1
                fc.write(json.dumps({
                    "id": f"{q['id']}-{suffix}", "style": q["style"], "query": query, "any_of": q["any_of"],
                    "direction": direction, "cross_tools": targets,
                    "source": "original" if original else "translation",
                }, ensure_ascii=False) + "\n")
    print(f"queries-dev-zh.jsonl: {len(dev)} ({len(zh_orig)} Chinese originals kept, {len(ZH)} translated to Chinese)")
    print(f"catalog tools with a Chinese description: {len(zh_tools)} of {len(all_tools)}")
    print(f"queries-cross.jsonl: {sum(n_cross.values())} " + ", ".join(f"{k}: {v}" for k, v in n_cross.items()))


if __name__ == "__main__":
    main()
