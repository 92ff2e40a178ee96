"""Generate ``src/kubelite/api/encoding/gotypes.py``: the Go type of every field of a built-in kind whose
type is a named non-struct Go type (``ImagePullPolicy PullPolicy`` -> ``v1.PullPolicy``), which
OpenAPI does not record but encoding/json's errors print.

Reads the Go sources of k8s.io/api and k8s.io/apimachinery (meta/v1, types) from git mirrors:

    python scripts/gen_gotypes.py /work/.mirror/kubernetes+api/repo \
        /work/.mirror/kubernetes+apimachinery/repo > src/kubelite/api/encoding/gotypes.py
"""

from __future__ import annotations

import re
import subprocess
import sys

BUILTIN = {"string", "bool", "byte", "int", "int32", "int64", "float64", "uint8", "any"}
NAMED = re.compile(
    r"^type (\w+) ((?:\[\]|map\[)[\w.\[\]]+|string|int32|int64|int|bool|float64)\s*$"
)
STRUCT = re.compile(r"^type (\w+) struct \{\s*$")
FIELD = re.compile(r'^\s+(\w+)\s+([^\s`]+)\s+`json:"([^",]*)')
INLINE = re.compile(r'^\s+\*?([\w.]+)\s+`json:"(?:,inline)?"')
IMPORT = re.compile(r'^\s*(?:(\w+)\s+)?"([^"]+)"\s*$')


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, text=True
    ).stdout


def package_files(repo: str, directory: str) -> list[str]:
    names = git(repo, "ls-tree", "--name-only", f"HEAD:{directory}").split()
    keep = [n for n in names if n.endswith(".go") and not n.endswith("_test.go")]
    keep = [n for n in keep if not n.startswith("zz_generated") and "generated" not in n]
    return [git(repo, "show", f"HEAD:{directory}/{n}") for n in keep]


class Package:
    def __init__(self, path: str, sources: list[str]) -> None:
        self.path = path
        self.name = path.rsplit("/", 1)[1]
        self.named: set[str] = set()
        self.structs: dict[str, list[tuple[str, str, dict[str, str]]]] = {}
        for source in sources:
            self.read(source)

    def read(self, source: str) -> None:
        imports: dict[str, str] = {}
        lines = source.splitlines()
        struct: str | None = None
        for line in lines:
            found = IMPORT.match(line)
            if found and "/" in found.group(2) and struct is None:
                alias = found.group(1) or found.group(2).rsplit("/", 1)[1]
                imports[alias] = found.group(2)
            found = NAMED.match(line)
            if found:
                self.named.add(found.group(1))
                continue
            found = STRUCT.match(line)
            if found:
                struct = found.group(1)
                self.structs[struct] = []
                continue
            if struct is None:
                continue
            if line.startswith("}"):
                struct = None
                continue
            inline = INLINE.match(line)
            if inline:
                self.structs[struct].append(("", inline.group(1), imports))
                continue
            found = FIELD.match(line)
            if found and found.group(3) and found.group(3) != "-":
                self.structs[struct].append((found.group(3), found.group(2), imports))


def resolve(
    expr: str, package: Package, imports: dict[str, str], packages: dict[str, Package]
) -> tuple[str, bool]:
    """The Go type string of ``expr`` in ``package`` and whether it names a non-struct type."""
    if expr.startswith("*"):
        return resolve(expr[1:], package, imports, packages)
    if expr.startswith("[]"):
        inner, named = resolve(expr[2:], package, imports, packages)
        return "[]" + inner, named
    if expr.startswith("map["):
        depth, i = 0, 3
        for i in range(3, len(expr)):
            depth += {"[": 1, "]": -1}.get(expr[i], 0)
            if depth == 0:
                break
        key, kn = resolve(expr[4:i], package, imports, packages)
        value, vn = resolve(expr[i + 1 :], package, imports, packages)
        return f"map[{key}]{value}", kn or vn
    if expr in BUILTIN:
        return ("uint8" if expr == "byte" else expr), False
    if "." in expr:
        alias, name = expr.split(".", 1)
        path = imports.get(alias, alias)
        other = packages.get(path)
        return f"{path.rsplit('/', 1)[1]}.{name}", other is not None and name in other.named
    return f"{package.name}.{expr}", expr in package.named


def main() -> None:
    api, machinery = sys.argv[1], sys.argv[2]
    packages: dict[str, Package] = {}
    dirs = sorted(
        {
            p.rsplit("/", 1)[0]
            for p in git(api, "ls-tree", "-r", "--name-only", "HEAD").split()
            if p.endswith("/types.go")
        }
    )
    for d in dirs:
        packages[f"k8s.io/api/{d}"] = Package(f"k8s.io/api/{d}", package_files(api, d))
    for d in ("pkg/apis/meta/v1", "pkg/types"):
        packages[f"k8s.io/apimachinery/{d}"] = Package(
            f"k8s.io/apimachinery/{d}", package_files(machinery, d)
        )
    table: dict[str, dict[str, str]] = {}
    for path, package in packages.items():
        prefix = "io.k8s." + path.removeprefix("k8s.io/").replace("/", ".") + "."

        def fields(struct: str, into: dict[str, str], pkg: Package) -> None:
            for json_name, expr, imports in pkg.structs.get(struct, []):
                if not json_name:  # an embedded struct's fields are the outer struct's
                    if "." not in expr:
                        fields(expr, into, pkg)
                    continue
                gotype, named = resolve(expr, pkg, imports, packages)
                if named:
                    into[json_name] = gotype

        for struct in package.structs:
            found: dict[str, str] = {}
            fields(struct, found, package)
            if found:
                table[prefix + struct] = found
    grouped: dict[str, dict[str, dict[str, str]]] = {}
    for definition in sorted(table):
        package, _, struct = definition.rpartition(".")
        grouped.setdefault(package, {})[struct] = dict(sorted(table[definition].items()))
    print(HEADER)
    print(f"NAMED_FIELDS: dict[str, dict[str, dict[str, str]]] = {grouped!r}")


HEADER = '''"""The Go types of built-in kinds' fields whose type is a named non-struct Go
type (OpenAPI records ``string``; encoding/json's errors print ``v1.PullPolicy``), by OpenAPI
package, struct and JSON field. Generated by scripts/gen_gotypes.py from k8s.io/api and
apimachinery (then ``ruff format``); do not edit."""
'''


if __name__ == "__main__":
    main()
