"""The callers a server process remembers: renewed early by one request, never by all.

At a thousand requests a second, every request of a key used to miss the cache in the same
instant each second and read the database at once; now the first request past half the
entry's life starts one read beside the others, and the entry still lapses after ``TTL_S``.
"""

from __future__ import annotations

import time

from fillpdf_provider.service.callers import CallerCache
from fillpdf_provider.service.keys import Caller
from fillpdf_provider.service.plans import PLANS

KEY_ID = "0123456789abcdef"
AUTHORIZATION = f"Bearer fpk_{KEY_ID}_{'s' * 43}"
CALLER = Caller(KEY_ID, "acct_1", PLANS["pro"])


def aged(cache: CallerCache, seconds: float) -> None:
    """Put the caller as read ``seconds`` ago."""
    cache.put(AUTHORIZATION, CALLER, time.monotonic() - seconds)


def test_a_fresh_entry_is_not_due() -> None:
    cache = CallerCache(ttl_s=1.0)
    aged(cache, 0.1)
    assert cache.get(AUTHORIZATION) == CALLER and not cache.due(CALLER)


def test_past_half_its_life_one_request_renews_it() -> None:
    cache = CallerCache(ttl_s=1.0)
    aged(cache, 0.6)
    assert cache.due(CALLER)
    assert not cache.due(CALLER)  # the others answer from the entry meanwhile
    assert cache.get(AUTHORIZATION) == CALLER
    cache.renewed(KEY_ID, CALLER, time.monotonic())
    assert not cache.due(CALLER)  # fresh again


def test_a_renewal_that_finds_the_key_refused_drops_it_at_once() -> None:
    cache = CallerCache(ttl_s=1.0)
    aged(cache, 0.6)
    assert cache.due(CALLER)
    cache.renewed(KEY_ID, None, time.monotonic())
    assert cache.get(AUTHORIZATION) is None


def test_a_failed_renewal_leaves_the_entry_to_lapse_on_time() -> None:
    cache = CallerCache(ttl_s=1.0)
    aged(cache, 0.6)
    assert cache.due(CALLER)
    cache.renewed(KEY_ID, CALLER, 0.0)  # the database did not answer
    assert cache.get(AUTHORIZATION) == CALLER
    assert cache.due(CALLER)  # a later request tries again
    aged(cache, 1.0)
    assert cache.get(AUTHORIZATION) is None  # past TTL_S nothing is served
