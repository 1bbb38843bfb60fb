"""Text scene graphs scored under any text protocol, for the command (``--text-graphs``) and the API
(``evaluate_file(..., text_graphs=True)``) alike: the protocol's record (``core.protocols``) says whether it takes
a GT file, which options it owns and with which defaults, and which function scores the answers. Nothing here
names a protocol."""

from __future__ import annotations

import os

from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import TEXT, names, protocol, resolve


def text_protocol(name: str | None):
    """The record of the text protocol ``name`` (``None``: the default, the registry's first)."""
    choices = names(TEXT)
    record = protocol(name or choices[0])
    if record.product != TEXT:
        raise InputError(f"text graphs take --protocol {', '.join(choices)}, got {name!r}", field="--protocol")
    return record


def text_options() -> tuple[str, ...]:
    """Every option a text protocol owns (the command's names, ``-`` as ``_``), in the registry's order."""
    return tuple(dict.fromkeys(name for p in names(TEXT) for name, _ in protocol(p).options))


def check_text_options(record, gt, options: dict) -> dict:
    """The options ``record``'s runner takes, its defaults filled in; :class:`InputError` for a GT it refuses or
    lacks, or an option of another protocol (``options``: the command's names, ``-`` as ``_``; unset ones are
    ``None`` or ``False``)."""
    if record.gt == "refused" and gt:
        raise InputError(f"--protocol {record.name} reads the GT from each sample (content): no --gt", field="--gt")
    if record.gt == "required" and not gt:
        raise InputError("--text-graphs scores the answers on the GT: give --gt", field="--gt")
    owned, unset = dict(record.options), (lambda value: value is None or value is False)  # 0 is a value (--top-k 0)
    for name, value in options.items():
        if not unset(value) and name not in owned:
            flag = "--" + name.replace("_", "-")
            owners = [p for p in names(TEXT) if name in dict(protocol(p).options)]
            raise InputError(f"{flag} is an option of --protocol {' or '.join(owners)} only", field=flag)
    return {name: default if unset(options.get(name)) else options[name] for name, default in owned.items()}


def evaluate_text_graphs(answers, gt=None, protocol_name: str | None = None, **options) -> dict:
    """The metrics document of the text answers ``answers`` (a file or folder) on ``gt`` under the text protocol
    ``protocol_name`` (``options``: its own, e.g. ``wordnet=True`` for ``r1sgg``); the one ``sgg-eval evaluate
    --text-graphs -o`` writes."""
    record = text_protocol(protocol_name)
    taken = check_text_options(record, gt, options)
    run = resolve(record.runner)
    args = (os.fspath(answers),) + (() if record.gt == "refused" else (None if gt is None else os.fspath(gt),))
    return run(*args, **taken)


def print_text_result(result: dict, protocol_name: str | None = None) -> None:
    """Print the lines the protocol's tool prints (stdout; a warning on stderr)."""
    resolve(text_protocol(protocol_name).printer)(result)
