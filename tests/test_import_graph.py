"""No import circle among judgebench's modules: each module, parsed with ``ast``, imports (at the top, inside a
function, ``from pkg import submodule`` included) only modules that do not import it back, however far round."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "judgebench"


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str], src: Path = SRC) -> set[str]:
    """The package's modules that ``path`` imports anywhere in its body: ``import a.b`` (a.b), ``from a import b``
    (b a module: a.b; else a, the package's ``__init__``), relative imports resolved."""
    name = module_name(path, src)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        found.update(t for t in targets if t in modules and t != name)
    return found


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    files = {module_name(p, src): p for p in sorted((src / PACKAGE).rglob("*.py"))}
    modules = set(files)
    return {name: imports_of(path, modules, src) for name, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_has_no_import_circle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_check_sees_a_circle_through_a_function_and_a_submodule(tmp_path):
    """The test above can fail: a circle made of an import inside a function and ``from pkg import module``."""
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from judgebench.sub import b\n    return b\n")
    (pkg / "sub" / "b.py").write_text("from .. import a\n")
    (pkg / "c.py").write_text("import judgebench.a\n")
    graph = import_graph(tmp_path)
    assert graph["judgebench.a"] == {"judgebench.sub.b"} and graph["judgebench.c"] == {"judgebench.a"}
    assert graph["judgebench.sub.b"] == {"judgebench.a"}
    assert find_cycle(graph) == ["judgebench.a", "judgebench.sub.b", "judgebench.a"]
    (pkg / "sub" / "b.py").write_text("X = 1\n")
    assert find_cycle(import_graph(tmp_path)) is None


def room_of(module: str, package: str) -> str:
    """The folder of ``package`` a module lives in: ``package`` itself for its top-level modules (and its
    ``__init__``), ``package.sub`` for anything under ``sub/``."""
    rest = module[len(package) + 1 :].split(".") if module != package else []
    return f"{package}.{rest[0]}" if len(rest) > 1 else package


def room_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """``graph`` restricted to ``package``, each module replaced by its room, arrows inside a room dropped."""
    inside = {m for m in graph if m == package or m.startswith(package + ".")}
    rooms: dict[str, set[str]] = {}
    for m in inside:
        rooms.setdefault(room_of(m, package), set()).update(
            room_of(t, package) for t in graph[m] if t in inside and room_of(t, package) != room_of(m, package)
        )
    return rooms


def test_compare_top_level_and_its_packages_import_no_circle():
    """compare's entry points import its packages, never the other way round, and no two packages import each other."""
    rooms = room_graph(import_graph(), f"{PACKAGE}.compare")
    assert {f"{PACKAGE}.compare.base", f"{PACKAGE}.compare.sections"} <= set(rooms)
    cycle = find_cycle(rooms)
    assert cycle is None, "import circle between compare's rooms: " + " -> ".join(cycle)
    assert not {r for r in rooms if r != f"{PACKAGE}.compare" and f"{PACKAGE}.compare" in rooms[r]}, (
        "a package imports compare's top level"
    )


def test_the_shared_base_imports_no_section():
    base = f"{PACKAGE}.compare.base"
    graph = import_graph()
    wrong = {
        (m, t)
        for m, targets in graph.items()
        if m.startswith(base)
        for t in targets
        if t.startswith(f"{PACKAGE}.compare.")
        and not t.startswith(f"{PACKAGE}.compare.analyses")
        and not t.startswith(base)
    }
    assert not wrong, f"compare/base imports outside the base and the analyses: {sorted(wrong)}"


def test_the_room_check_sees_a_circle_between_a_top_level_module_and_a_package():
    graph = {
        "p": set(),
        "p.cli": {"p.base.model"},
        "p.base.model": {"p.base.names"},
        "p.base.names": {"p.report"},
        "p.report": set(),
    }
    assert room_graph(graph, "p") == {"p": {"p.base"}, "p.base": {"p"}}
    assert find_cycle(room_graph(graph, "p")) == ["p", "p.base", "p"]
