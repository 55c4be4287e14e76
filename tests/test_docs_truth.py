"""README.md and docs/*.md name only things that exist.

What is checked, in every Markdown file of the front door (README.md) and docs/:

- **File paths.** Every inline code span that is one token and looks like a path (it holds a ``/`` or ends with a
  known file extension) names a file or directory of the checkout: relative to the repository root, to ``src/``
  (``judgebench/cli/run.py``), to ``src/judgebench/`` (``metrics/ppi.py``, ``cache/``) or to the config tree
  ``src/judgebench/conf/``. A bare file name (``PROVENANCE.md``, ``sweep_summary.json``) must be a file of the
  checkout or a name the code writes (it appears in the source of ``src/`` or ``benchmarks/``). Paths named in
  commands (inline or in fenced blocks) are checked too when they start at a top-level entry of the checkout
  (``launch/...``, ``benchmarks/...``, ``tests/...``). Placeholders (``<cache_dir>/calls/``) and globs are not
  checked; what a run writes (``mlruns/``, ``compare-out/...``), paths on the user's machine and the
  ``../shared/...`` data, which a checkout may lack, are skipped by the explicit lists below.
- **Config choices.** Every ``group=option`` (and ``+group=option``; comma or ``|`` lists) of a Hydra config group
  names a YAML file of the config tree (``src/judgebench/conf/<group>/<option>.yaml``; ``hydra/launcher=slurm``
  too), and every ``job=...`` is one of run.py's jobs.
- **Commands.** Every ``judgebench-*`` console script named is in pyproject's ``[project.scripts]``;
  ``judgebench <command>`` names a command of the ``judgebench`` script (and ``judgebench cache|models <sub>``
  one of its sub-commands), as its usage text lists them; every ``python -m MODULE`` names a module of the
  checkout; every ``JUDGEBENCH_*`` environment variable appears in the code.
- **Links.** Every relative Markdown link names an existing file, and its ``#anchor`` a heading of that file.
- README.md stays a front door: at most 200 lines.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PKG = SRC / "judgebench"
CONF = PKG / "conf"
NOT_CHECKED: set[str] = set()  # every page is checked
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in NOT_CHECKED)]

EXTENSIONS = (
    ".py",
    ".yaml",
    ".yml",
    ".md",
    ".sh",
    ".json",
    ".jsonl",
    ".txt",
    ".csv",
    ".tsv",
    ".html",
    ".png",
    ".toml",
    ".tex",
    ".db",
    ".trec",
    ".run",
    ".gguf",
    ".whl",
    ".err",
)

# Written at run time (git-ignored), not part of a checkout.
RUNTIME_PREFIXES = (
    "mlruns/",
    "outputs/",
    "multirun/",
    "compare-out/",
    ".cache/",
    "tests/artifacts/",
    "dist/",
    ".hydra/",
    ".venv/",
    ".submitit/",
)
# Data beside the checkout, which a checkout may lack.
SHARED_PREFIX = "../shared"
# Paths on the user's machine, in examples.
USER_PATHS = {
    "path/to/template.txt",  # judge.prompt=path/to/template.txt: your own template
    "conf/hydra/launcher/mycluster.yaml",  # a launcher profile of your own
    "/path/to/python",  # JUDGEBENCH_JOB_PYTHON=/path/to/python
    "passages/bm25.dl19.top100.passages.json",  # inside the user's dataset.data_dir
    "my.txt",
    "a.txt",
    "b.txt",
    "my.run",  # the user's qrels and run files
    "metrics.json",  # a benchmark --out file name, if named
    # docs/architecture.md walks through adding a judge of your own, "always_two" (tests/test_architecture.py
    # writes these files in a temporary copy and runs them)
    "src/judgebench/judges/always_two.py",
    "conf/judge/always_two.yaml",
    "judge/always_two.yaml",
}
USER_PREFIXES = ("/home/", "/shared/", "/tmp/", "../myconf")
# Identifiers that hold a "/" but are no paths: Hugging Face hub ids, an ir_datasets id, HTTP header names.
NOT_PATHS = {
    "google/flan-ul2",
    "google/flan-t5-xl",
    "google/flan-t5-xxl",
    "Soyoung97/RankT5-3b",
    "msmarco-passage/trec-dl-20XX/judged",
}
# group=option values that are not meant to exist: the documented example of an unknown option, and configs of
# the user's own config directory.
CHOICE_EXAMPLES = {("judge", "gpt5"), ("judge", "myjudge"), ("hydra/launcher", "mycluster"), ("judge", "always_two")}


def _texts() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in DOCS}


def _split(text: str) -> tuple[str, list[str]]:
    """(prose without fenced blocks, the fenced blocks' lines)."""
    prose, fenced, inside = [], [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        (fenced if inside else prose).append(line)
    return "\n".join(prose), fenced


def _spans(prose: str) -> list[str]:
    return [s.replace("\n", " ").strip() for s in re.findall(r"`([^`]+)`", prose)]


def _code(text: str) -> list[str]:
    """Every piece of code: inline spans and fenced lines."""
    prose, fenced = _split(text)
    return _spans(prose) + fenced


def _source_text() -> str:
    files = [
        *PKG.rglob("*.py"),
        *(ROOT / "benchmarks").rglob("*.py"),
        *(ROOT / "launch").glob("*.sh"),
        *SRC.joinpath("hydra_plugins").rglob("*.py"),
        *CONF.rglob("*.yaml"),
        ROOT / ".ci" / "run",
    ]
    return "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files if f.is_file())


def _checkout_files() -> set[str]:
    names = set()
    for top in ("src", "benchmarks", "launch", "tests", "docs", ".ci"):
        for f in (ROOT / top).rglob("*"):
            if ".egg-info" not in str(f) and "__pycache__" not in str(f):
                names.add(f.name)
    names.update(f.name for f in ROOT.iterdir())
    return names


def _exists(path: str) -> bool:
    path = path.rstrip("/")
    return any((base / path).exists() for base in (ROOT, SRC, PKG, CONF))


def _skipped(path: str) -> bool:
    return (
        path.startswith(SHARED_PREFIX)
        or path.startswith(RUNTIME_PREFIXES)
        or path in USER_PATHS
        or path.startswith(USER_PREFIXES)
        or path in NOT_PATHS
    )


def _written_by_code(name: str, files: set[str], source: str) -> bool:
    """A bare name: a file or directory of the checkout, or one the code writes (the name, or its stem for the
    tables written as (stem, frame) pairs, as a string literal of the source)."""
    if name.endswith((".py", ".yaml", ".yml", ".sh", ".toml")):
        return name in files  # source is never written at run time: `cache.py` must be a file of the checkout
    stem = name.rsplit(".", 1)[0]
    return name in files or name in source or any(f"{q}{stem}{q}" in source for q in "\"'")


def _path_like(token: str) -> bool:
    if not token or re.search(r"[\s<>*{}$=|\[\](),;'\"@]|://|\.\.\.", token) or token.startswith(("-", "~")):
        return False
    if token.startswith(".") and "/" not in token and token.count(".") == 1:
        return False  # a bare extension: `.tsv`
    return "/" in token or token.lower().endswith(EXTENSIONS)


def _path_problems(text: str, source: str, files: set[str]) -> list[str]:
    prose, fenced = _split(text)
    problems = []
    for span in _spans(prose):
        if " " in span or not _path_like(span) or _skipped(span):
            continue
        if "/" in span.rstrip("/"):
            if not _exists(span):
                problems.append(f"path `{span}` does not exist")
        elif not _written_by_code(span.rstrip("/"), files, source):
            problems.append(f"file `{span}` is neither in the checkout nor written by the code")
    tops = tuple(f"{p.name}/" for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")) + (".ci/",)
    for line in [s for s in _spans(prose) if " " in s] + fenced:
        for token in re.split(r"[\s=]+", line):
            token = token.rstrip(".,;:)")
            if token.startswith(tops) and _path_like(token) and not _skipped(token) and not _exists(token):
                problems.append(f"path {token!r} (in {line.strip()[:60]!r}) does not exist")
    return problems


def _groups() -> list[str]:
    groups = {str(d.relative_to(CONF)) for d in CONF.rglob("*") if d.is_dir() and any(d.glob("*.yaml"))}
    return sorted(groups, key=len, reverse=True)


def _jobs() -> set[str]:
    for f in PKG.rglob("*.py"):
        m = re.search(r"^JOBS\s*=\s*\(([^)]*)\)", f.read_text(encoding="utf-8"), re.M)
        if m:
            return set(re.findall(r"[\"'](\w+)[\"']", m.group(1)))
    raise AssertionError("no JOBS tuple in src/judgebench: where are the job kinds now?")


def _choice_problems(text: str) -> list[str]:
    groups = _groups()
    pattern = re.compile(r"(?<![\w./-])(\+{0,2})(" + "|".join(map(re.escape, groups)) + r"|job)=([^\s`'\")\]]+)")
    problems = []
    for code in _code(text):
        for plus, group, values in pattern.findall(code):
            if group == "experiment" and not plus:
                continue  # compare's experiment=NAME is an MLflow experiment; the config group is +experiment=
            for value in re.split(r"[,|]", values.split("@")[0]):
                value = value.rstrip(".;:")
                if not value or value == "..." or value.isupper() or "<" in value or (group, value) in CHOICE_EXAMPLES:
                    continue
                if group == "job":
                    if value not in _jobs():
                        problems.append(f"`job={value}`: not one of {sorted(_jobs())}")
                elif not (CONF / group / f"{value}.yaml").is_file():
                    problems.append(f"`{group}={value}`: no {CONF.relative_to(ROOT)}/{group}/{value}.yaml")
    return problems


def _scripts() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"])


def _commands() -> dict[str, set[str]]:
    """The `judgebench` script's commands, each with the words its usage line allows after it."""
    from judgebench.cli import USAGE

    commands = {}
    for line in USAGE.splitlines()[1:]:
        m = re.match(r"  ([a-z]+) (.*?)(?:\s{2,}|$)", line)
        if m:
            commands[m.group(1)] = set(re.findall(r"(?<![\w-])[a-z][a-z]+(?![\w=])", m.group(2)))
    return commands


def _command_problems(text: str) -> list[str]:
    problems = []
    scripts = _scripts()
    for name in set(re.findall(r"(?<![\w/.-])(judgebench-[\w-]+)", text)):
        if name not in scripts:
            problems.append(f"console script {name} is not in pyproject's [project.scripts] {sorted(scripts)}")
    commands = _commands()
    for code in _code(text):
        for command, sub in re.findall(
            r"(?:^|[\s(;&|])judgebench\s+([a-z][\w-]*)(?![\w:-])(?:\s+([a-z][\w-]*))?", code
        ):
            if command not in commands:
                problems.append(f"`judgebench {command}`: the judgebench script has no such command")
            elif command in ("cache", "models") and sub and sub not in commands[command]:
                problems.append(f"`judgebench {command} {sub}`: not one of {sorted(commands[command])}")
        for module in re.findall(r"python3?\s+-m\s+([\w.]+)", code):
            if module in ("venv", "pip", "pytest", "mlflow"):
                continue
            rel = Path(*module.split("."))
            if not any(
                (base / f"{rel}.py").is_file() or (base / rel / "__main__.py").is_file() for base in (ROOT, SRC)
            ):
                problems.append(f"`python -m {module}`: no such module with a main in the checkout")
    return problems


def _env_problems(text: str, source: str) -> list[str]:
    return [
        f"environment variable {name} appears nowhere in the code"
        for name in sorted(set(re.findall(r"\bJUDGEBENCH_[A-Z0-9_]+\b", text)))
        if name not in source
    ]


def _slug(heading: str) -> str:
    heading = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def _link_problems(path: Path, text: str) -> list[str]:
    problems = []
    prose, _ = _split(text)
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            problems.append(f"link ({target}): {file} does not exist")
        elif anchor and dest.suffix == ".md":
            slugs = {_slug(h) for h in re.findall(r"^#+ (.*)$", _split(dest.read_text(encoding="utf-8"))[0], re.M)}
            if anchor not in slugs:
                problems.append(f"link ({target}): {dest.name} has no heading #{anchor}")
    return problems


@pytest.fixture(scope="module")
def source() -> str:
    return _source_text()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_paths_exist(doc, source):
    problems = _path_problems(doc.read_text(encoding="utf-8"), source, _checkout_files())
    assert not problems, f"{doc.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_config_choices_exist(doc):
    problems = _choice_problems(doc.read_text(encoding="utf-8"))
    assert not problems, f"{doc.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_and_variables_exist(doc, source):
    text = doc.read_text(encoding="utf-8")
    problems = _command_problems(text) + _env_problems(text, source)
    assert not problems, f"{doc.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(doc):
    problems = _link_problems(doc, doc.read_text(encoding="utf-8"))
    assert not problems, f"{doc.name}:\n" + "\n".join(problems)


def test_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 200, f"README.md has {lines} lines; move detail into docs/"


def test_the_checks_see_what_they_check():
    """The extraction finds what the docs name: a check that matches nothing would pass on anything."""
    texts = "\n".join(_texts().values())
    code = "\n".join(c for t in _texts().values() for c in _code(t))
    assert "judge=gemini_flash" in code and "ranker=prp_ul2" in code and "+experiment=circularity" in code
    assert "judgebench-compare" in texts and "judgebench cache" in code
    assert any("/" in s and _path_like(s) for t in _texts().values() for s in _spans(_split(t)[0]))
    assert {"judge", "ranker", "hydra/launcher", "experiment", "system"} <= set(_groups())
    planted = "`src/judgebench/no_such.py` `judge=no_such` `judgebench-nope` [x](no_such.md)"
    assert _path_problems(planted, "", set()) and _choice_problems(planted)
    assert _command_problems(planted) and _link_problems(ROOT / "README.md", planted)


def _compare_usage_keys(text: str) -> set[str]:
    """The keys of the judgebench-compare usage block (the fenced lines from ``judgebench-compare experiment=``)."""
    block = re.search(r"```bash\n(judgebench-compare experiment=NAME.*?)```", text, re.S)
    assert block, "docs/compare.md has no fenced usage block starting 'judgebench-compare experiment=NAME'"
    return set(re.findall(r"(?<![\w.])([a-z][\w.]*)=", block.group(1)))


def test_compare_usage_in_the_docs_is_the_schema_s():
    """docs/compare.md's usage block names every option of compare's one schema (CompareArgs, which also makes
    ``--help``), and nothing else: an option added to the schema must be documented, a documented one must exist."""
    from judgebench.compare.command.schema import KEYS, USAGE

    documented = _compare_usage_keys((ROOT / "docs" / "compare.md").read_text(encoding="utf-8"))
    assert documented == KEYS, (
        f"in the docs only: {sorted(documented - KEYS)}; in the schema only: {sorted(KEYS - documented)}"
    )
    assert _compare_usage_keys("```bash\njudgebench-compare experiment=NAME [level=0.95]\n```") == {
        "experiment",
        "level",
    }
    assert all(f"[{k}=" in USAGE or f" {k}=" in USAGE for k in KEYS)  # --help is made from the same schema
