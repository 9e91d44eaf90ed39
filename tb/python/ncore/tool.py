"""Running the `ncore` command-line tool (tb/cli) from Python."""
import argparse
import json
import os
import subprocess
import sys

try:
    from ._paths import NCORE_BIN as _BUILT_BIN  # written by CMake into build/python/ncore
except ImportError:  # the source tree, not the build
    _BUILT_BIN = None


def ncore_binary():
    path = os.environ.get("NCORE_BIN") or _BUILT_BIN
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError(f"the ncore binary was not found (NCORE_BIN={os.environ.get('NCORE_BIN')!r}, built: "
                           f"{_BUILT_BIN!r}): build ncore (bash scripts/test.sh) and use PYTHONPATH=build/python")
    return path


class RunError(RuntimeError):
    """`ncore run` ended with an error, a deadlock or the watchdog: its report is the message."""


def _run(cmd, what, done=lambda report: True):
    """Runs an ncore command that prints JSON; its report, or RunError with what went wrong."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        report = json.loads(p.stdout) if p.stdout.strip().startswith("{") else None
    except json.JSONDecodeError:
        report = None
    if p.returncode != 0 or report is None or not done(report):
        detail = (report or {}).get("message") or (p.stderr.strip() or p.stdout.strip())
        raise RunError(f"{what} failed (exit {p.returncode}): {detail}")
    return report


def run_program(program, engine="golden", size=128, outputs=None, extra=()):
    """`ncore run PROGRAM --json`, its JSON report as a dict."""
    cmd = [ncore_binary(), "run", program, "--engine", engine, "--size", str(size), "--json"]
    if outputs:
        cmd += ["--outputs", outputs]
    return _run(cmd + list(extra), f"ncore run {program} --engine {engine}")


def run_system(program, engine="golden", outputs=None, system="chip", extra=()):
    """`ncore tlm run PROGRAM --system chip --json`: the programs on every core of a chip."""
    cmd = [ncore_binary(), "tlm", "run", program, "--system", system, "--json", "--core-engine", engine]
    if outputs:
        cmd += ["--outputs", outputs]
    cmd += list(extra)
    return _run(cmd, f"ncore tlm run {program} --system {system}", lambda r: r.get("status") == "done")


class ArgumentParser(argparse.ArgumentParser):
    """argparse with ncore's exit status for a bad option: 1 (argparse's own is 2)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")
