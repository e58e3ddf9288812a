#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks contrib/spack/slimlink/package.py without Spack (not packaged for
Debian): loads it against a stand-in of the `spack.package` names it uses,
which records the directives, then calls configure_args() for every variant
combination and checks each option against `configure --help`.

usage: spack_recipe_check.py RECIPE CONFIGURE_HELP_FILE
"""
import importlib.util
import itertools
import re
import sys
import types

directives = []


def directive(kind):
    def record(*args, **kwargs):
        directives.append((kind, args, kwargs))
    return record


class Version:
    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


class Dep:
    def __init__(self, name, version):
        self.version = Version(version)
        self.prefix = types.SimpleNamespace(bin="/spack/%s/bin" % name)
        self.mpicc = "/spack/%s/bin/mpicc" % name


class Spec:
    def __init__(self, variants):
        self.variants = variants
        self.deps = {"ucx": Dep("ucx", "1.13.1"), "mpich": Dep("mpich", "4.1")}

    def satisfies(self, text):
        m = re.fullmatch(r"([+~])(\w+)", text)
        if not m:
            raise AssertionError("spec.satisfies(%r): the check knows only +v/~v" % text)
        return self.variants[m.group(2)] == (m.group(1) == "+")

    def __getitem__(self, name):
        return self.deps[name]


class AutotoolsPackage:
    def with_or_without(self, name):
        return ["--with-" + name if self.spec.variants[name] else "--without-" + name]

    def enable_or_disable(self, name):
        return ["--enable-" + name if self.spec.variants[name] else "--disable-" + name]


def join_path(*parts):
    return "/".join(parts)


stub = types.ModuleType("spack.package")
for name in ("version", "variant", "depends_on", "resource", "conflicts", "license",
             "maintainers", "patch", "provides"):
    setattr(stub, name, directive(name))
stub.AutotoolsPackage = AutotoolsPackage
stub.join_path = join_path
stub.Executable = lambda path: (lambda *a, **k: None)
stub.__all__ = [n for n in dir(stub) if not n.startswith("_")]
sys.modules["spack"] = types.ModuleType("spack")
sys.modules["spack.package"] = stub

recipe, help_file = sys.argv[1], sys.argv[2]
spec_loader = importlib.util.spec_from_file_location("slimlink_recipe", recipe)
module = importlib.util.module_from_spec(spec_loader)
spec_loader.loader.exec_module(module)
Package = module.Slimlink

help_text = open(help_file).read()
known = set(re.findall(r"--(?:with|without|enable|disable)-([a-z0-9-]+)", help_text))
failures = []
variants = [args[0] for kind, args, kwargs in directives if kind == "variant"]
print("variants: %s" % ", ".join(variants))
for values in itertools.product([False, True], repeat=len(variants)):
    pkg = Package()
    pkg.spec = Spec(dict(zip(variants, values)))
    pkg.prefix = types.SimpleNamespace(lib="/spack/slimlink/lib")
    pkg.stage = types.SimpleNamespace(source_path="/stage")
    args = pkg.configure_args()
    label = " ".join(("+" if v else "~") + n for n, v in zip(variants, values))
    for arg in args:
        m = re.fullmatch(r"--(?:with|without|enable|disable)-([a-z0-9-]+)(=.*)?", arg)
        if not m or m.group(1) not in known:
            failures.append("%s: configure has no option %s" % (label, arg))
    print("%s: %s" % (label, " ".join(args)))
for kind, args, kwargs in directives:
    if kind == "resource" and not re.fullmatch(r"[0-9a-f]{64}", kwargs.get("sha256", "")):
        failures.append("resource %s has no sha256" % kwargs.get("name"))
for f in failures:
    print("FAIL: " + f)
sys.exit(1 if failures else 0)
