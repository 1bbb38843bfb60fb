"""``sgg-eval evaluate ANSWERS --text-graphs``: scene graphs written as text by multimodal LLMs (issue 48), under
sgg-eval's ``sets`` protocol or a published tool's; ``text.evaluate`` checks the options against the protocol's
record and runs it, ``text.printed`` prints its tool's lines (docs/text_graphs.md)."""

from __future__ import annotations

import argparse

from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import TEXT, names

# The command's options a text protocol may own (its record's ``options``).
TEXT_OPTIONS = ("wordnet", "spacy", "sbert", "top_k", "seed")


def evaluate_text(args: argparse.Namespace) -> None:
    """Refuse the box and PSG options, run the protocol, write ``-o``, print its lines."""
    from sgg_eval.io.atomic import write_json
    from sgg_eval.text.evaluate import evaluate_text_graphs, print_text_result, text_protocol

    others = [f for f, on in (("--task", args.task), ("--stats", args.stats), ("--zeroshot", args.zeroshot),
                              ("--setting", args.setting), ("--split-file", args.split_file)) if on]  # fmt: skip
    if others or (args.protocol and args.protocol not in names(TEXT)):
        raise InputError(
            f"--text-graphs takes --gt, --protocol {', '.join(names(TEXT))}, --wordnet, --spacy, --sbert, "
            "--top-k, --seed and -o only",
            field="--text-graphs",
        )
    record = text_protocol(args.protocol)
    options = {name: getattr(args, name) for name in TEXT_OPTIONS}
    result = evaluate_text_graphs(args.predictions, args.gt, record.name, **options)
    if args.output:
        write_json(args.output, result)
    print_text_result(result, record.name)
