"""What an evaluation entry is: the one rule for reading an entry name (used by the configuration schema,
the stages' file layout and the tables).

Entries are model names (a row of that model), ``<model>_pko`` (the model + PKO prior) and ``pko_only``
(the prior alone, on the pairs of ``pko.pko_only_from``). A model's own name wins over the suffix rule, so
a model may be called ``x_pko``.
"""

from __future__ import annotations

from collections.abc import Container
from typing import NamedTuple

PKO_SUFFIX = "_pko"
PKO_ONLY = "pko_only"


class Entry(NamedTuple):
    kind: str  # "model" | "pko" | "pko_only"
    model: str  # the model whose predictions the entry starts from


def parse_entry(entry: str, models: Container[str], pko_only_from: str) -> Entry:
    """The entry's kind and base model; ``KeyError`` if it names no model (the schema reports it)."""
    if entry in models:
        return Entry("model", entry)
    if entry == PKO_ONLY:
        return Entry("pko_only", pko_only_from)
    if entry.endswith(PKO_SUFFIX) and entry[: -len(PKO_SUFFIX)] in models:
        return Entry("pko", entry[: -len(PKO_SUFFIX)])
    raise KeyError(entry)


def method_family(method: str) -> str:
    """A row's family for filtering runs: ``baseline``, ``pko`` (model + prior), ``prior_only`` or
    ``debiasing`` (every other method: Reweight, TDE, DLFE, NICE, RTPB(CB), ...)."""
    return {"Baseline": "baseline", "PKO": "pko", "PKO-only": "prior_only"}.get(method, "debiasing")
