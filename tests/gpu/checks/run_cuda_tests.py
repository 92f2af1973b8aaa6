"""Runs python/tests/test_cuda_arrays.py without pytest (the stand-in in
tests/gpu/checks/pytest_shim): every test function with every combination of its
parameters; prints one line per failure and a pytest-like summary
("N passed, M skipped, K failed"); exit status 1 when any failed.
Usage: python run_cuda_tests.py  (from python/tests)"""

import itertools
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "pytest_shim"))
sys.path.insert(0, os.getcwd())
import pytest  # noqa: E402  the stand-in
import test_cuda_arrays as t  # noqa: E402

passed = skipped = failed = 0
reasons = {}
for name in sorted(n for n in dir(t) if n.startswith("test_")):
    fn = getattr(t, name)
    params = getattr(fn, "_params", [])
    names = [n for ns, _ in params for n in ns]
    combos = itertools.product(*[vs for _, vs in params]) if params else [()]
    for combo in combos:
        args = {}
        for (ns, _), v in zip(params, combo):
            vals = v if len(ns) > 1 else (v,)
            args.update(zip(ns, vals))
        label = f"{name}[{'-'.join(str(args[n]) for n in names)}]"
        if getattr(fn, "_skip", None):
            skipped += 1
            reasons[fn._skip] = reasons.get(fn._skip, 0) + 1
            continue
        try:
            fn(**args)
            passed += 1
        except pytest.Skipped as e:
            skipped += 1
            reasons[str(e)] = reasons.get(str(e), 0) + 1
        except Exception:
            failed += 1
            print(f"FAILED {label}: "
                  f"{traceback.format_exc().strip().splitlines()[-1]}")
for r, n in reasons.items():
    print(f"SKIPPED [{n}] test_cuda_arrays.py: {r}")
print(f"{passed} passed, {skipped} skipped, {failed} failed (without pytest: "
      "tests/gpu/checks/run_cuda_tests.py)")
sys.exit(1 if failed else 0)
