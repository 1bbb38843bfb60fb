"""A toy protocol, registered from outside the package as CONTRIBUTING.md's "Adding a protocol" says: one record,
a runner and a printer, and nothing else touched. It scores text answers on a split store by the share of GT
images that got an answer (the simplest number that depends on both files). Importing this module registers it."""

from __future__ import annotations

from sgg_eval.core.protocols import TEXT, Protocol, Source, register
from sgg_eval.text.inputs import read_answers, read_gt

NAME = "toy"


def run(answers: str, gt: str) -> dict:
    """The toy's document: ``answered`` = answered GT images / GT images."""
    images, _, _ = read_gt(gt)
    graphs, _ = read_answers(answers, images)
    answered = sum(img.image_id in graphs for img in images)
    return {"task": "text graphs", "protocol": NAME, "metrics": {"answered": answered / len(images)},
            "counts": {"images": len(images)}}  # fmt: skip


def show(result: dict) -> None:
    print(f"answered={100 * result['metrics']['answered']:.2f} over {result['counts']['images']} images")


TOY = Protocol(
    NAME, TEXT, "the share of GT images answered (a test's toy)",
    Source("sgg-eval tests", "tests/toy_protocol.py", "tests/toy_protocol.py"), ("text graphs",),
    gt="required", runner="toy_protocol:run", printer="toy_protocol:show",
    in_pipeline=True,
)  # fmt: skip
register(TOY)
