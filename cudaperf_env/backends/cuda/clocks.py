"""GPU clocks, temperature and throttling at the time of a measurement, from NVML.

Timings mean little without the clocks they ran at: a card that throttles
(power, heat) mid-run makes every kernel look slower. :func:`read_clocks`
samples NVML (``nvidia-ml-py``, the ``gpu`` extra) and is recorded beside every
timing; without NVML it returns an empty mapping rather than failing the step.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

# Throttle reasons that mean the clocks were held down by something other than idleness.
_THROTTLES = {
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sw_thermal": 0x20,
    "hw_thermal": 0x40,
    "hw_power_brake": 0x80,
}


@lru_cache(maxsize=1)
def _nvml() -> Any:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # no library, no driver: clocks are simply not recorded
        return None


def read_clocks(device: int = 0) -> dict[str, object]:
    """SM and memory clocks (current and maximum, MHz), temperature and active throttle reasons."""
    nvml = _nvml()
    if nvml is None:
        return {}
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(device)
        reasons = nvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
        return {
            "sm_clock_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
            "mem_clock_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
            "max_sm_clock_mhz": nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM),
            "temperature_c": nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
            "throttled_by": [name for name, bit in _THROTTLES.items() if reasons & bit],
        }
    except Exception as exc:  # a driver without one of these queries
        return {"clocks_error": str(exc)}
