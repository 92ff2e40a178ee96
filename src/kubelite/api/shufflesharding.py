"""Shuffle sharding: a flow's hand of queues dealt from its hash, as k8s.io/apiserver's
``pkg/util/shufflesharding`` (``Dealer``, ``RequiredEntropyBits``, ``MaxHashBits``). Used by the
API Priority and Fairness filter to pick a request's queue and by PriorityLevelConfiguration
validation to check that a hand can be dealt."""

from __future__ import annotations

import math

#: MaxHashBits: the bits of a flow's hash a deal may use
MAX_HASH_BITS = 60


def required_entropy_bits(deck_size: int, hand_size: int) -> int:
    """RequiredEntropyBits: ``ceil(log2(deck_size) * hand_size)``."""
    return math.ceil(math.log2(deck_size) * hand_size)


def deal(hash_value: int, deck_size: int, hand_size: int) -> list[int]:
    """``Dealer.Deal``: ``hand_size`` distinct cards of ``deck_size``, from the hash's bits."""
    remainders = []
    for i in range(hand_size):
        hash_value, remainder = divmod(hash_value, deck_size - i)
        remainders.append(remainder)
    hand = []
    for i in range(hand_size):
        card = remainders[i]
        for j in range(i, 0, -1):
            if card >= remainders[j - 1]:
                card += 1
        hand.append(card)
    return hand
