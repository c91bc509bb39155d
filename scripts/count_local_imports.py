"""Count function-local imports: every ``import``/``from ... import`` statement nested in a
function body (``def``/``async def``, at any depth), in every .py file of the tree outside
tests/, .venv/ and hidden folders. Prints the total, the count per top-level folder and,
with ``-v``, each one (``path:line: statement``).

Usage: ``python scripts/count_local_imports.py [ROOT] [-v]`` (ROOT: the checkout, default .).
"""
from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path


def local_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, source)`` of each import statement inside a function of ``path``."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path))
    lines = text.splitlines()
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                found.append((child.lineno, lines[child.lineno - 1].strip()))
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(tree, False)
    return found


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    root = Path(args[0] if args else ".").resolve()
    per_folder: Counter[str] = Counter()
    total = 0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in ("tests", "build") or any(p.startswith(".") for p in rel.parts):
            continue
        for line, src in local_imports(path):
            total += 1
            per_folder[rel.parts[0] if len(rel.parts) > 1 else "."] += 1
            if verbose:
                print(f"{rel}:{line}: {src}")
    print(f"function-local imports: {total}")
    for folder, n in per_folder.most_common():
        print(f"  {folder}/: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
