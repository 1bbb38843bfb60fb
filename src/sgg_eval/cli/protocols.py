"""``sgg-eval protocols``: every protocol of the registry (``core.protocols``), by product, with the tool that
defines it (repository @ commit, file) and what it scores; ``--json`` gives the records for scripts."""

from __future__ import annotations

import argparse
import dataclasses
import json

from sgg_eval.core.protocols import PRODUCTS, registered


def run_protocols(args: argparse.Namespace) -> None:
    every = registered()
    if args.json:
        print(json.dumps([dataclasses.asdict(p) for p in every], indent=1))
        return
    for product in PRODUCTS:
        mine = [p for p in every if p.product == product]
        print(f"{product} ({len(mine)}; --protocol, default {mine[0].name}):")
        for p in mine:
            scores = f" (scores {p.scores.upper()})" if p.scores else ""
            print(f"  {p.name:<14} {p.summary}{scores}")
            print(f"  {'':<14} source: {p.source.tool}, {p.source.where}: {p.source.file}")
    docs = "docs/metrics.md, docs/openvocab.md, docs/oiv6.md, docs/text_graphs.md, docs/action_genome.md"
    print(f"{len(every)} protocols; docs: {docs}")


def add(sub) -> None:
    """The sub-command ``protocols`` of ``sub``."""
    p = sub.add_parser(
        "protocols",
        help="list every evaluation protocol, with the tool and the code that define it",
        description="Every protocol sgg-eval computes (--protocol), by product (box SGG, panoptic SGG, text scene "
        "graphs, video scene graphs), with its source: the tool, its repository at the commit read, the file "
        "that computes it.",
    )
    p.add_argument("--json", action="store_true", help="the registry's records as JSON")
    p.set_defaults(func=run_protocols)
