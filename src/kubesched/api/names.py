"""Generated names (apimachinery ``names.SimpleNameGenerator``): a ``generateName`` base cut to 58
characters and five characters drawn from an alphabet without vowels or look-alikes, so that no
word is spelled; and the same alphabet for the controllers' hashes (``rand.SafeEncodeString``)."""

from __future__ import annotations

import random

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_NAME = 63
RANDOM_LENGTH = 5


def generate_name(base: str, rng: random.Random | None = None) -> str:
    """``GenerateName``: the base (truncated) and five random characters (``rng``: a seeded stream,
    so that a simulation gives the same names again)."""
    draw = rng or random
    return base[: MAX_NAME - RANDOM_LENGTH] + "".join(draw.choice(SAFE_ALPHABET) for _ in range(RANDOM_LENGTH))
