"""Needle-in-a-haystack prompts: filler sentences, needles at a chosen depth, reproducible.

A haystack is a run of filler sentences drawn from many templates (``FILLER``) whose slots are filled
from small word pools, so no two haystacks read alike and none repeats the same ten sentences. The
filler never uses a needle value, a key name or the words of a needle sentence, so the only place
the answer appears in the prompt is the needle itself.
"""

from __future__ import annotations

import random

FILLER = (
    "The {role} walked to the {place} early in the {time}.",
    "It rained over the {place} for most of the {time}.",
    "A {adj} wind came down from the hills near the {place}.",
    "The {role} said that the {place} had been {adj} all week.",
    "Nobody at the {place} expected the {time} to be so {adj}.",
    "The road to the {place} was {adj} after the storm.",
    "Every {time} the {role} counted the trees behind the {place}.",
    "The {role} and the {role2} talked about the harvest for an hour.",
    "Some people think the {place} is the most {adj} spot in the region.",
    "The old bridge near the {place} was painted {color} last year.",
    "The {role} wrote a long letter about the {adj} weather.",
    "Children played in the {place} until the {time} was over.",
    "The lights of the {place} could be seen from far away.",
    "A {color} flag hung above the door of the {place}.",
    "The {role} liked to rest under the trees in the {time}.",
    "The river next to the {place} was {adj} and slow.",
    "In the {time} the streets around the {place} were quiet.",
    "The {role} fixed the fence behind the {place} with the {role2}.",
    "Most of the town gathered at the {place} for the festival.",
    "The {role} had never seen the {place} so {adj} before.",
    "Fresh snow covered the roofs of the {place} in the {time}.",
    "The {role2} planted flowers along the path to the {place}.",
    "The meeting at the {place} ended later than planned.",
    "A small boat drifted past the {place} in the {time}.",
    "The {role} painted the walls of the {place} {color}.",
    "The {adj} hills beyond the {place} turned {color} in autumn.",
    "The {role} and the {role2} walked home together after dinner.",
    "Birdsong filled the {place} all through the {time}.",
    "The {role} told a story about a journey across the sea.",
    "There was a long line outside the {place} in the {time}.",
    "The {role2} cleaned the windows of the {place} on Sunday.",
    "The sky above the {place} was {color} at sunset.",
    "The {role} kept a diary of every {adj} day at the {place}.",
    "A quiet path led from the {place} to the lake.",
    "The {role} waited at the {place} for the last train.",
    "The garden behind the {place} was {adj} and green.",
    "Music from the {place} drifted over the fields in the {time}.",
    "The {role} remembered the {place} from many years ago.",
    "Tall grass grew along the fence of the {place}.",
    "The {role2} carried water from the well to the {place}.",
)  # fmt: skip
ROLES = (
    "farmer", "teacher", "baker", "doctor", "sailor", "painter", "driver", "gardener", "miller",
    "student", "mayor", "nurse", "fisherman", "carpenter", "singer", "guard", "traveler", "priest",
)  # fmt: skip
PLACES = (
    "market", "harbor", "village", "station", "library", "school", "church", "square", "mill",
    "farm", "castle", "garden", "bakery", "theater", "hospital", "museum", "inn", "valley",
)  # fmt: skip
TIMES = ("morning", "evening", "afternoon", "night", "spring", "summer", "autumn", "winter")
ADJECTIVES = ("cold", "warm", "busy", "quiet", "bright", "dark", "calm", "noisy", "wet", "dry")
COLORS = ("red", "blue", "green", "yellow", "white", "brown", "gray", "purple")


def filler_sentence(rng: random.Random) -> str:
    """One filler sentence with its slots filled."""
    role, role2 = rng.sample(ROLES, 2)
    return rng.choice(FILLER).format(
        role=role,
        role2=role2,
        place=rng.choice(PLACES),
        time=rng.choice(TIMES),
        adj=rng.choice(ADJECTIVES),
        color=rng.choice(COLORS),
    )


def haystack(rng: random.Random, n_sentences: int) -> list[str]:
    """``n_sentences`` filler sentences, no sentence twice in a row."""
    out: list[str] = []
    while len(out) < n_sentences:
        s = filler_sentence(rng)
        if not out or s != out[-1]:
            out.append(s)
    return out


def insert_at_depth(sentences: list[str], needles: list[str], depths: list[float]) -> list[str]:
    """Insert each needle at ``depth`` (0 = first sentence, 1 = last) of the filler."""
    out = list(sentences)
    for needle, depth in sorted(zip(needles, depths, strict=True), key=lambda nd: -nd[1]):
        out.insert(round(depth * len(sentences)), needle)
    return out
