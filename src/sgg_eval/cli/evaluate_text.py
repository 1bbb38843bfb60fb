"""``sgg-eval evaluate ANSWERS --text-graphs``: scene graphs written as text by multimodal LLMs (issue 48), under
sgg-eval's ``sets`` protocol or a published tool's; ``text.evaluate`` checks the options against the protocol's
record and runs it, ``text.printed`` prints its tool's lines (docs/text_graphs.md)."""

from __future__ import annotations

import argparse

from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import TEXT, names


def evaluate_text(args: argparse.Namespace) -> None:
    """Refuse the box and PSG options, run the protocol, write ``-o``, print its lines."""
    from sgg_eval.io.atomic import write_json
    from sgg_eval.text.evaluate import evaluate_text_graphs, print_text_result, text_options, text_protocol

    others = [f for f, on in (("--task", args.task), ("--stats", args.stats), ("--zeroshot", args.zeroshot),
                              ("--setting", args.setting), ("--split-file", args.split_file)) if on]  # fmt: skip
    if others or (args.protocol and args.protocol not in names(TEXT)):
        raise InputError(
            f"--text-graphs takes --gt, --protocol {', '.join(names(TEXT))}, "
            + ", ".join(f"--{name.replace('_', '-')}" for name in text_options())
            + " and -o only",
            field="--text-graphs",
        )
    record = text_protocol(args.protocol)
    options = {name: getattr(args, name) for name in text_options()}
    result = evaluate_text_graphs(args.predictions, args.gt, record.name, **options)
    if args.output:
        write_json(args.output, result)
    print_text_result(result, record.name)
