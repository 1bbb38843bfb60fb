"""The protocol registry (``core.protocols``, issue 65): one record per protocol, each with its product and the
source that defines it; the protocol lists of ``core.defaults`` and ``sgg-eval protocols`` read it; the facts a
record states are the ones the code acts on."""

from __future__ import annotations

import json
import re

import pytest

from sgg_eval.boxes.split_gt import FILE_GT, clips_gt
from sgg_eval.cli import main
from sgg_eval.core import defaults
from sgg_eval.core.protocols import BOXES, PANOPTIC, PRODUCTS, REGISTRY, TEXT, names, protocol

EVERY = ("reference", "strict", "oiv6", "ovsgtr", "vs3", "pgsg", "sgg-benchmark", "sgbench", "sgbench-paper", "openpsg",
         "sets", "r1sgg", "sgvlm", "asmv2", "provision", "sttran", "oed")  # fmt: skip


def test_every_protocol_has_one_record_with_its_source():
    assert tuple(p.name for p in REGISTRY) == EVERY
    for p in REGISTRY:
        assert p.product in PRODUCTS and p.summary and p.tasks, p.name
        assert p.source.tool and p.source.where and p.source.file, p.name
        assert p.own or re.search(r"@ [0-9a-f]{7}|PyPI .* \d|arXiv", p.source.where), p.name  # a commit, a version
    assert [p.name for p in REGISTRY if p.own] == ["strict", "sets"]
    assert protocol("openpsg").png_reader == "detectron2"
    assert protocol("sgg-benchmark").gt_clip_edge == 0 and protocol("reference").gt_clip_edge == 1
    with pytest.raises(ValueError, match="protocol must be one of reference, strict"):
        protocol("nope")


def test_the_defaults_lists_are_the_registrys():
    assert defaults.PROTOCOLS == names(BOXES) and defaults.PSG_PROTOCOLS == names(PANOPTIC)
    assert defaults.TEXT_PROTOCOLS == names(TEXT)
    assert defaults.PROTOCOL == names(BOXES)[0] and defaults.PSG_PROTOCOL == names(PANOPTIC)[0]
    assert defaults.OPENVOCAB_PROTOCOLS == ("ovsgtr", "vs3", "pgsg")
    assert set(defaults.PSG_PNG_READERS) == set(names(PANOPTIC))


def test_a_records_gt_clipping_is_what_the_evaluation_does():
    """A box protocol whose record says its loader clips clips a GT that may hold boxes past the border; one whose
    loader does not, does not."""
    for p in REGISTRY:
        if p.product == BOXES:
            assert clips_gt(p.name, FILE_GT) == p.gt_clipped, p.name
            assert not clips_gt(p.name, "clipped"), p.name


def test_the_command_lists_them(capsys):
    assert main(["protocols"]) == 0
    out = capsys.readouterr().out
    for p in REGISTRY:
        assert re.search(rf"^  {re.escape(p.name)} ", out, re.M), p.name
        assert p.source.where in out and p.source.file in out
    assert out.strip().endswith("docs/action_genome.md") and "17 protocols" in out
    assert main(["protocols", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in records] == list(EVERY) and records[0]["source"]["tool"]
