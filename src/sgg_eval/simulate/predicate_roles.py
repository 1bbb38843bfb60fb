"""How the simulated VG150 predicates relate to each other, read by both simulators: the world
(``simulate.world``: correlated predicates share their composable pairs, a generic parent is annotated on its
children's pairs) and the models (``simulate.models``: confusable predicates share visual evidence).

SIMULATED DATA: these are the simulator's assumptions about VG150's predicates, not facts read from it.
"""

from __future__ import annotations

# Groups of correlated predicates: they compose with mostly the same class pairs and anchor classes.
PREDICATE_GROUPS = (
    ("wearing", "wears", "has", "in"),
    ("on", "sitting on", "standing on", "walking on", "laying on", "lying on"),
    ("near", "behind", "in front of"),
    ("of", "belonging to", "part of"),
    ("looking at", "watching"),
    ("holding", "carrying"),
    ("above", "over"),
)
# A specific predicate's generic, visually indistinguishable counterpart (annotators use either). Used by the
# model simulator, with the groups, to leak visual evidence (simulate.models.confusable_sets).
GENERIC_PARENT = {
    "parked on": "on",
    "growing on": "on",
    "mounted on": "on",
    "painted on": "on",
    "on back of": "on",
    "attached to": "on",
    "riding": "on",
    "hanging from": "on",
    "covering": "on",
    "across": "on",
    "says": "on",
    "walking in": "in",
    "flying in": "in",
    "covered in": "with",
    "with": "has",
    "made of": "of",
    "for": "of",
    "from": "of",
    "playing": "holding",
    "using": "holding",
    "eating": "holding",
    "against": "near",
    "along": "near",
    "between": "near",
    "at": "near",
    "to": "near",
    "and": "near",
    "under": "near",
}
