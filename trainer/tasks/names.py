"""Invented place names for the generated look-up tasks: a fixed, seeded pool of (country, capital) pairs that no
pretrained model knows and no two of which share a name.

Every name is ``NAME_LETTERS`` letters long (capitalised consonant-vowel syllables, then a consonant), so no name
is a substring of another, and none begins with a name of the hand-written ``CAPITALS`` table
(``mara_bench.trainer.tasks.lookup``): a demonstration policy can tell which capital a text names by plain substring search.
"""

from __future__ import annotations

import random

CONSONANTS = "bdfgklmnprstvz"
VOWELS = "aeiou"
SYLLABLES = 2
NAME_LETTERS = 2 * SYLLABLES + 1
POOL_SIZE = 2048
"""Pairs in the pool: enough for fresh entities every step of a learning run plus a held-out split."""
POOL_SEED = 20261125


def invented_name(rng: random.Random) -> str:
    """One capitalised name of ``SYLLABLES`` consonant-vowel syllables and a closing consonant ("Lomirak")."""
    letters = "".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(SYLLABLES))
    return (letters + rng.choice(CONSONANTS)).capitalize()


def name_pool(reserved: set[str], size: int = POOL_SIZE, seed: int = POOL_SEED) -> list[tuple[str, str]]:
    """``size`` distinct (country, capital) pairs; no name starts with one of ``reserved``."""
    rng = random.Random(seed)
    seen: set[str] = set()
    names: list[str] = []
    while len(names) < 2 * size:
        name = invented_name(rng)
        if name in seen or any(name.startswith(word) for word in reserved):
            continue
        seen.add(name)
        names.append(name)
    return list(zip(names[0::2], names[1::2], strict=True))
