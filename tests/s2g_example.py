"""A tiny SIMULATED S2G case for the README's example (``make s2g-example``): ``python tests/s2g_example.py OUT``
writes ``OUT/s2g/`` with the tiny simulated world's split stores, SIMULATED caption graphs in the upstream layout
and SGDet predictions on every split: the simulated Motifs baseline's (``baseline.*.h5``), the GT graphs'
(``gt.*.h5``) and random graphs' (``random.*.h5``). No real data: the fixture tests/test_s2g_world.py checks S2G on."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from s2g_fixture import simulated_world  # noqa: E402

if __name__ == "__main__":
    out = Path(sys.argv[1]) / "s2g"
    simulated_world(out)
    print(f"wrote a tiny SIMULATED S2G case (no real data) in {out}: splits/, captions.json, baseline|gt|random.*.h5")
