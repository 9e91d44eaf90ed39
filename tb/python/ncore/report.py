"""Where a system run's time went, from `ncore tlm run --json` (scripts/system_bench,
scripts/llm-layer). Simulated figures: exact properties of the model, not of the machine."""


def union_us(spans):
    """Total length of the union of (start, end) spans."""
    total, end = 0.0, -1.0
    for s, e in sorted(spans):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def busy_us(core, queue):
    """A core's busy time on a queue (pe: the array streaming; sp: any DMA engine busy; cc: a
    collective in flight), counted in its own clock's cycles (the base clock at trn2)."""
    return core["busy_cycles"][queue] / (core["cycles"] / core["time_ns"]) / 1e3 if core["cycles"] else 0.0


def split(run):
    """Compute, HBM and collective time as shares of the run (the busiest core for the first
    two), stack and link utilization."""
    sim = run["sim_time_us"]
    pe = max(busy_us(c, "pe") for c in run["cores"])
    sp = max(busy_us(c, "sp") for c in run["cores"])
    cc = union_us([(c["start_us"], c["end_us"]) for c in run["collectives"]])
    stacks = [s["utilization"] for s in run["hbm"]]
    links = [link["utilization"] for link in run["links"]] or [0.0]
    return {"sim": sim, "compute": pe / sim, "hbm": sp / sim, "collective": cc / sim,
            "stack_mean": sum(stacks) / len(stacks), "stack_max": max(stacks),
            "link_mean": sum(links) / len(links), "link_max": max(links), "links": len(run["links"])}
