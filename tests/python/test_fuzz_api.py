"""Random calls of the public Python API (fuzz_api.py) end in a result or one of kjit's
documented errors: no crash, no hang, no SystemError, no error of the caller's own objects let
through unnamed.

KJIT_FUZZ_CALLS sets how many calls are made (300 by default; the full run is
KJIT_FUZZ_CALLS=10000), KJIT_FUZZ_SEED the seed (random by default, and printed). They are
made in batches of child processes, one test each, so that pytest -n spreads them."""

import os

import pytest

import fuzz_api

CALLS = int(os.environ.get("KJIT_FUZZ_CALLS", "300"))
SEED = int(os.environ.get("KJIT_FUZZ_SEED", str(int.from_bytes(os.urandom(4), "little"))))
BATCH = 250
# A call that gives no answer for this long is taken as hung: a compile takes seconds at most.
HANG_S = 120.0


@pytest.mark.parametrize("first", range(0, CALLS, BATCH))
def test_random_calls_end_in_a_result_or_a_documented_error(first):
    count = min(BATCH, CALLS - first)
    print(f"fuzz seed {SEED}, calls {first} to {first + count - 1}")
    failures, outcomes = fuzz_api.run_in_children(SEED, first, count, HANG_S)
    print("outcomes:", outcomes)
    assert not failures, f"{len(failures)} of {count} calls failed:\n" + "\n".join(
        f.report() for f in failures)
    # The calls reach the kernels: some run, and some are refused.
    assert outcomes.get("ok", 0) > count // 20, outcomes
    assert outcomes.get("TypeError", 0) + outcomes.get("ValueError", 0) > count // 20, outcomes
