"""The verify benchmark's ceilings: the full compare's seconds over verify's measured floors."""
from __future__ import annotations

from typing import Any

from binlake.bench.verify_bench import ceilings


def _m(seconds: float, jvm: float = 0.0, primary: float = 0.0, driver: float = 0.0) -> Any:
    return {"seconds": seconds, "jvm_cpu_s": jvm, "driver_cpu_s": driver,
            "primary": {"cpu_s": primary}}


def test_ceilings_divide_the_full_compare_by_the_floors() -> None:
    entry = {"full": _m(9.0), "source": _m(2.0, primary=1.5, driver=0.1),
             "delta": _m(3.0, jvm=4.4), "verify": _m(4.5)}
    got = ceilings(entry, cores=2)
    assert got["x_ceiling_overlap"] == 3.0            # 9 / max(2, 3)
    assert got["x_ceiling_serial"] == 1.8             # 9 / (2 + 3)
    assert got["floor_cpu_s"] == 6.0                  # 1.5 + 0.1 + 4.4
    assert got["x_ceiling_cores"] == 3.0              # 6 CPU s over 2 cores = 3 s = max
    assert got["verify_over_floor_s"] == 1.5          # 4.5 - 3
    assert ceilings(entry, cores=1)["x_ceiling_cores"] == 1.5  # 6 CPU s on one core
