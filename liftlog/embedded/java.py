"""Find a Java runtime good enough for ZooKeeper (and Spark): 17 or newer.

Checked before starting ZooKeeper so a missing or old Java is one clear sentence instead of a
JVM stack trace (or a silent exit) in a log file.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from spark_log.errors import ProcessStartError

MIN_JAVA_MAJOR = 17
JAVA_VERSION_TIMEOUT_S = 30.0
_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?')


def find_java(explicit: str | Path | None = None) -> str:
    """``explicit`` if given, else ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    if explicit is not None:
        return str(explicit)
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    on_path = shutil.which("java")
    if on_path is None:
        raise ProcessStartError(
            f"java not found (no JAVA_HOME, not on PATH): ZooKeeper needs Java "
            f"{MIN_JAVA_MAJOR} or newer; install a JDK/JRE {MIN_JAVA_MAJOR}+ "
            "(e.g. apt-get install openjdk-17-jre-headless)"
        )
    return on_path


def java_major_version(java: str) -> int:
    """The major version ``java -version`` reports (``1.8.0_x`` is 8, ``17.0.1`` is 17)."""
    try:
        result = subprocess.run(
            [java, "-version"], capture_output=True, timeout=JAVA_VERSION_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProcessStartError(
            f"cannot run {java} -version ({exc}); ZooKeeper needs Java {MIN_JAVA_MAJOR}+"
        ) from exc
    output = (result.stderr + result.stdout).decode("utf-8", errors="replace")
    match = _VERSION_RE.search(output)
    if match is None:
        raise ProcessStartError(f"cannot tell the Java version from {java} -version: {output!r}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def require_java(explicit: str | Path | None = None, minimum: int = MIN_JAVA_MAJOR) -> str:
    """A usable java executable, or ProcessStartError saying what is missing."""
    java = find_java(explicit)
    major = java_major_version(java)
    if major < minimum:
        raise ProcessStartError(
            f"{java} is Java {major}; ZooKeeper (and Spark) need Java {minimum} or newer"
        )
    return java
