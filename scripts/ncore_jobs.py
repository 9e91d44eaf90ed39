"""Runs many independent commands, here or on Slurm: the back-end of scripts/regress and
scripts/sweep.

A Job is one command (one process) with its environment. `run_jobs` runs a list of them:
  - backend "local": a pool of `jobs` worker threads on this machine;
  - backend "slurm": one Slurm job array (sbatch --array, at most `jobs` tasks at a time). Each
    task runs `python3 scripts/ncore_jobs.py --slurm-task JOBS_JSON` on a node: its job, and
    writes the result as OUT/slurm/result_<i>.json, which the submitting process collects while
    it follows the array with squeue. OUT and the build must be on a file system the nodes
    share. scripts/slurm_local starts a single-node cluster on loopback for trying it.
Every run has a watchdog (`timeout` seconds); a task that leaves no result (cancelled, killed,
timed out) is a failure with its Slurm log. A job whose command honours NCORE_WAVES
(`waves_env`) is run again with waves when it fails; a job that runs tests (`needs_tests`)
fails when nothing ran.
"""

import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from tqdm import tqdm

ROOT = pathlib.Path(__file__).resolve().parent.parent


class Job:
    def __init__(self, family, name, cmd, env=None, waves_env=False, needs_tests=True):
        self.family, self.name, self.cmd, self.env = family, name, cmd, env or {}
        self.waves_env = waves_env      # the command honours NCORE_WAVES
        self.needs_tests = needs_tests  # a run that tested nothing fails
        self.status, self.seconds, self.log, self.rerun, self.node = "pending", 0.0, "", "", ""

    def reproduce(self):
        env = " ".join(f"{k}={v}" for k, v in sorted(self.env.items()))
        return (env + " " if env else "") + " ".join(shlex.quote(c) for c in self.cmd)

    def spec(self):
        return {"family": self.family, "name": self.name, "cmd": self.cmd, "env": self.env,
                "waves_env": self.waves_env, "needs_tests": self.needs_tests}

    @staticmethod
    def from_spec(s):
        return Job(s["family"], s["name"], s["cmd"], s["env"], s["waves_env"], s["needs_tests"])


def run_job(job, timeout, extra_env=None):
    """Runs the job's command once (in the repository's root): exit code, output, seconds."""
    env = dict(os.environ, **job.env, **(extra_env or {}))
    start = time.time()
    try:
        p = subprocess.run(job.cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=timeout)
        code, out = p.returncode, p.stdout
    except FileNotFoundError as e:
        code, out = -1, f"ncore_jobs: cannot run {job.cmd[0]}: {e}\n"
    except subprocess.TimeoutExpired as e:
        code = -1
        out = (e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or ""))
        out += f"\nncore_jobs: watchdog: no result after {timeout} s\n"
    # A run that tested nothing fails: a filter or label with no test in this build (the
    # tensor-4x4 family and the label sizes need a build configured with NCORE_ALL_SIZES=ON).
    if job.needs_tests and code == 0 and ("[  PASSED  ] 0 tests." in out or "No tests were found" in out):
        code = 1
        out += ("\nregress: no test ran: this build has none of them (without --no-build, "
                "regress configures the build with -DNCORE_ALL_SIZES=ON)\n")
    return code, out, time.time() - start


def rerun_with_waves(job, timeout, out):
    """A failing run again, with waves (for the runs whose command honours NCORE_WAVES)."""
    if not job.waves_env:
        return ""
    waves = out / "waves" / f"{job.family}-{job.name.replace(' ', '-')}.fst"
    code, _, _ = run_job(job, timeout, {"NCORE_WAVES": str(waves)})
    return (str(waves) if waves.exists() else "re-run wrote no waves") + \
        (" (failed again)" if code != 0 else " (passed on re-run: not reproducible!)")


def run_local(jobs, workers, timeout, out, progress):
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(run_job, j, timeout): j for j in jobs}
        for fut in as_completed(futures):
            j = futures[fut]
            code, j.log, j.seconds = fut.result()
            j.status = "pass" if code == 0 else "fail"
            progress.update(code == 0)
    for j in jobs:
        if j.status == "fail":
            j.rerun = rerun_with_waves(j, timeout, out)


def slurm_task(jobs_file):
    """One array task (run on a Slurm node): run number SLURM_ARRAY_TASK_ID, write its result."""
    spec = json.loads(pathlib.Path(jobs_file).read_text())
    index = int(os.environ["SLURM_ARRAY_TASK_ID"])
    job = Job.from_spec(spec["jobs"][index])
    code, log, seconds = run_job(job, spec["timeout"])
    rerun = rerun_with_waves(job, spec["timeout"], pathlib.Path(spec["out"])) if code != 0 else ""
    result = pathlib.Path(spec["out"]) / "slurm" / f"result_{index}.json"
    tmp = result.with_suffix(".tmp")
    tmp.write_text(json.dumps({"code": code, "log": log, "seconds": seconds, "rerun": rerun,
                               "node": os.environ.get("SLURMD_NODENAME", "")}))
    tmp.rename(result)  # the submitter never reads half a result
    return 0


def run_slurm(jobs, workers, timeout, out, progress, tool, partition=None):
    """Submits the runs as one job array, follows it with squeue, collects the results."""
    for t in ("sbatch", "squeue", "scancel"):
        if not shutil.which(t):
            raise SystemExit(f"{tool}: --backend slurm needs {t} (Debian's slurm-client)")
    slurm_dir = out / "slurm"
    shutil.rmtree(slurm_dir, ignore_errors=True)
    slurm_dir.mkdir(parents=True)
    jobs_file = slurm_dir / "jobs.json"
    jobs_file.write_text(json.dumps({"out": str(out.resolve()), "timeout": timeout,
                                     "jobs": [j.spec() for j in jobs]}))
    cmd = ["sbatch", "--parsable", f"--array=0-{len(jobs) - 1}%{workers}",
           f"--job-name=ncore-{tool}", f"--chdir={ROOT}", f"--output={slurm_dir}/task_%a.out",
           f"--time={max(1, (2 * timeout + 59) // 60)}"]
    if partition:
        cmd.append(f"--partition={partition}")
    cmd += ["--wrap", " ".join(shlex.quote(c) for c in
                               [sys.executable, str(pathlib.Path(__file__).resolve()),
                                "--slurm-task", str(jobs_file)])]
    sub = subprocess.run(cmd, capture_output=True, text=True)
    if sub.returncode != 0:
        raise SystemExit(f"{tool}: sbatch refused the array: {sub.stderr.strip()}")
    job_id = sub.stdout.strip().split(";")[0]
    print(f"{tool}: Slurm job array {job_id} ({len(jobs)} tasks, at most {workers} at a time)",
          flush=True)
    seen = set()
    # Watchdog: every task has its own time limit; the whole array gets them all in sequence.
    deadline = time.time() + timeout * (len(jobs) // max(1, workers) + 2) + 300
    while True:
        for i, j in enumerate(jobs):
            result = slurm_dir / f"result_{i}.json"
            if i in seen or not result.exists():
                continue
            r = json.loads(result.read_text())
            j.log, j.seconds, j.rerun, j.node = r["log"], r["seconds"], r["rerun"], r["node"]
            j.status = "pass" if r["code"] == 0 else "fail"
            seen.add(i)
            progress.update(r["code"] == 0)
        if len(seen) == len(jobs):
            break
        queued = subprocess.run(["squeue", "-h", "-j", job_id], capture_output=True, text=True)
        if queued.returncode == 0 and not queued.stdout.strip():
            time.sleep(2)  # the last results may still be on their way
            if all((slurm_dir / f"result_{i}.json").exists() for i in range(len(jobs))):
                continue
            break
        if time.time() > deadline:
            subprocess.run(["scancel", job_id])
            break
        time.sleep(1)
    for i, j in enumerate(jobs):
        if i not in seen:
            task_log = slurm_dir / f"task_{i}.out"
            j.status, j.seconds = "fail", 0.0
            j.log = (f"{tool}: Slurm task {job_id}_{i} left no result (cancelled, killed or "
                     f"timed out)\n" + (task_log.read_text()[-4000:] if task_log.exists() else ""))
            progress.update(False)


class Progress:
    """The live progress line: a tqdm bar with the count of failed runs beside it."""

    def __init__(self, total):
        self.failed = 0
        self.lock = threading.Lock()
        self.bar = tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True,
                        mininterval=0 if sys.stderr.isatty() else 30, postfix={"failed": 0})

    def update(self, ok):
        with self.lock:
            self.failed += 0 if ok else 1
            self.bar.set_postfix(failed=self.failed, refresh=False)
            self.bar.update(1)
            if self.bar.n == self.bar.total:
                self.bar.close()


def run_jobs(jobs, backend, workers, timeout, out, tool, partition=None):
    """Runs every job (backend "local" or "slurm"), with a progress line; fills in each job's
    status ("pass" or "fail"), log, seconds, re-run and (on Slurm) node."""
    progress = Progress(len(jobs))
    if backend == "slurm":
        run_slurm(jobs, workers, timeout, out, progress, tool, partition)
    else:
        run_local(jobs, workers, timeout, out, progress)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--slurm-task":
        sys.exit(slurm_task(sys.argv[2]))
    raise SystemExit("usage: ncore_jobs.py --slurm-task JOBS_JSON (a Slurm array task; "
                     "scripts/regress and scripts/sweep submit these)")
