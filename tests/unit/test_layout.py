"""The layout rules the import contracts cannot state: one meaning per name, short signatures.

(The folders as layers, commands apart and the sans-I/O modules are
``.importlinter``'s contracts, checked by ``lint-imports``.)"""

import ast
import collections
import os

import pytest

from checkout import ROOT

PACKAGES = ("broker", "loadtest")
MAX_PARAMETERS = 6


def python_files(package):
    for directory, subdirectories, files in os.walk(os.path.join(ROOT, package)):
        subdirectories[:] = [d for d in subdirectories if d not in ("node", "demo", "__pycache__")]
        for filename in files:
            if filename.endswith(".py"):
                yield os.path.join(directory, filename)


def test_no_module_or_public_class_name_means_two_things():
    meanings = collections.defaultdict(set)
    for package in PACKAGES:
        for path in python_files(package):
            relative = os.path.relpath(path, ROOT)
            name = os.path.basename(path)[:-3]
            if name not in ("__init__", "__main__"):
                meanings[name].add(relative)
            else:
                meanings[os.path.basename(os.path.dirname(path))].add(os.path.dirname(relative))
            with open(path) as f:
                tree = ast.parse(f.read())
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    meanings[node.name].add("%s:%s" % (relative, node.name))
    twice = {name: sorted(where) for name, where in meanings.items() if len(where) > 1}
    assert not twice, "one name, two things: %s" % twice


@pytest.mark.parametrize("package, instead", [
    ("broker", "pass a Node, ClientRules or a dataclass instead"),
    ("loadtest", "pass a GroupSpec, the run's Started or a dataclass instead"),
])
def test_no_signature_takes_more_than_six_parameters(package, instead):
    long = []
    for path in python_files(package):
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = node.args
                names = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
                if names[:1] in (["self"], ["cls"]):
                    names = names[1:]
                if len(names) > MAX_PARAMETERS:
                    long.append("%s:%d %s(%s)" % (os.path.relpath(path, ROOT), node.lineno, node.name,
                                                   ", ".join(names)))
    assert not long, "%s: %s" % (instead, long)


def test_test_modules_have_names_of_their_own():
    """Test folders are not packages: two modules of one name cannot both be collected."""
    seen = collections.defaultdict(list)
    for directory, subdirectories, files in os.walk(os.path.join(ROOT, "tests")):
        subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
        for filename in files:
            if filename.startswith("test_") and filename.endswith(".py"):
                seen[filename].append(os.path.relpath(os.path.join(directory, filename), ROOT))
    assert not {name: paths for name, paths in seen.items() if len(paths) > 1}
